// The REST client: JSON in and out, the session cookie plus the CSRF header on
// mutations, errors turned into toasts, and feature detection so the page
// degrades when the server does not offer an endpoint yet (404/405).
import { toast } from "./dom.js";
import { t } from "./i18n.js";

const BASE = "/api/v1";
let csrfToken = "";
let onUnauthenticated = () => {};

export const features = {
  search: null, // unknown until the first search: tried, then remembered views: false, spaces: false, attachments: false,
  comments: true, reactions: true, shares: true,
};

export function setCsrf(token) { csrfToken = token || ""; }
export function onSignedOut(handler) { onUnauthenticated = handler; }

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message || `HTTP ${status}`);
    this.status = status;
    this.code = body?.code;
    this.details = body?.details || [];
  }
  // The route itself is missing (an endpoint not built yet), not a resource.
  get unsupported() {
    return this.status === 405 || (this.status === 404 && /^not found$/i.test(this.message));
  }
}

export async function api(path, options = {}) {
  try {
    return await request(path, options);
  } catch (err) {
    // Another tab signed in again (new session, new token): refresh it once.
    if (err instanceof ApiError && err.status === 403 && /csrf/i.test(err.message) && !options.retried) {
      const me = await request("/auth/me", { quiet: true });
      setCsrf(me.csrfToken);
      return request(path, { ...options, retried: true });
    }
    throw err;
  }
}

async function request(path, { method = "GET", body, query, headers = {}, quiet = false, raw = false, retried = false } = {}) {
  let url = BASE + path;
  if (query) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") params.set(k, v);
    const qs = params.toString();
    if (qs) url += (url.includes("?") ? "&" : "?") + qs;
  }
  const init = { method, headers: { Accept: "application/json", ...headers }, credentials: "same-origin" };
  if (method !== "GET" && csrfToken) init.headers["X-CSRF-Token"] = csrfToken;
  if (body instanceof FormData || body instanceof Blob) init.body = body;
  else if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (err) {
    if (!quiet) toast(t("networkError"), "error");
    throw err;
  }
  if (raw) return response;
  const text = await response.text();
  let data = {};
  try { data = text ? JSON.parse(text) : {}; } catch { data = { message: text }; }
  if (!response.ok) {
    const error = new ApiError(response.status, data);
    const csrf = response.status === 403 && /csrf/i.test(error.message) && !retried;
    if (response.status === 401 && !quiet) onUnauthenticated();
    else if (!quiet && !error.unsupported && !csrf) toast(error.message || t("error"), "error");
    throw error;
  }
  return data;
}

export const memoId = (name) => name.replace(/^memos\//, "");

// Which optional endpoints exist: cheap probes after the first paint, refined
// on use. Answers the probed bodies, so nothing is fetched twice.
export async function detectFeatures(username) {
  // No answer at all (offline) leaves attachments offered: a file chosen
  // offline is kept and sent with its memo (decision 0039); the "online"
  // event asks again.
  const probe = async (key, path, query) => {
    try { const body = await api(path, { query, quiet: true }); features[key] = true; return body; }
    catch (err) { features[key] = key === "attachments" && !(err instanceof ApiError); return null; }
  };
  const [spaces, views] = await Promise.all([
    probe("spaces", "/spaces"),
    probe("views", `/users/${encodeURIComponent(username)}/views`),
    probe("attachments", "/attachments", { pageSize: 1 }),
  ]);
  return { spaces: spaces?.spaces || [], views: views?.views || [] };
}

// Mark a feature missing when its route answers 404/405; rethrow otherwise.
export function degrade(feature, error) {
  if (error instanceof ApiError && error.unsupported) {
    features[feature] = false;
    document.dispatchEvent(new CustomEvent("features-changed"));
    return true;
  }
  return false;
}
