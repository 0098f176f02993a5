// Application state and the hash router. Views read `state` and re-render on
// "route" events; filters live in the URL so reloads and links keep them.
export const state = {
  me: null,            // the signed-in User
  profile: null,       // instance profile (registration, public visibility rules)
  stats: null,         // users/{me}:getStats (tags, heatmap)
  spaces: [],          // the caller's spaces, when the API offers them
  views: [],           // saved views
  invitations: [],     // spaces the caller is invited to (state INVITED)
  access: {},          // spaces/{uid} → { grants, home }: the caller's effective grants
};

// Routes: #/ (home), #/explore, #/archived, #/space/<uid>, #/m/<memo id>,
// #/settings, #/admin, #/share/<token>
export function currentRoute() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, query = ""] = raw.split("?");
  const parts = path.split("/").filter(Boolean);
  const params = Object.fromEntries(new URLSearchParams(query));
  return { name: parts[0] || "home", arg: parts[1] ? decodeURIComponent(parts.slice(1).join("/")) : "", params };
}

export function navigate(name, arg = "", params = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== "" && v != null));
  const path = name === "home" ? "/" : `/${name}${arg ? "/" + encodeURIComponent(arg) : ""}`;
  const qs = query.toString();
  const hash = `#${path}${qs ? "?" + qs : ""}`;
  if (location.hash !== hash) location.hash = hash;
  else window.dispatchEvent(new HashChangeEvent("hashchange"));
}

// Update the current route's filter params (null removes one).
export function setParams(changes) {
  const route = currentRoute();
  const params = { ...route.params };
  for (const [k, v] of Object.entries(changes)) {
    if (v === null || v === "" || v === undefined) delete params[k];
    else params[k] = v;
  }
  navigate(route.name, route.arg, params);
}

export const isAdmin = () => Boolean(state.me && (state.me.role === "ADMIN" || state.me.role === "HOST"));

const cel = (s) => JSON.stringify(s);

// The CEL filter for a route: the page's own scope ANDed with the user's chips.
// `scope: false` leaves the page's own scope out (the user's chips only).
export function filterFor(route, { scope = true } = {}) {
  const p = route.params;
  const parts = [];
  if (!scope) { /* chips only */ } else if (route.name === "explore") parts.push('visibility in ["PUBLIC", "PROTECTED"]');
  // Home is one's own memos (issue 19, defect 4), plus, by a visible choice,
  // what one's spaces hold; others' memos are on Explore.
  if (scope && route.name === "home" && state.me) {
    const mine = `creator == ${cel(state.me.name)}`;
    parts.push(p.spaces ? `(${mine} || space != null)` : mine);
  }
  if (scope && route.name === "space") parts.push(`space == ${cel("spaces/" + route.arg)}`);
  if (p.tag) parts.push(`tag in [${cel(p.tag)}]`);
  if (p.vis) parts.push(`visibility == ${cel(p.vis)}`);
  if (p.pinned) parts.push("pinned");
  if (p.tasks) parts.push("has_task_list");
  if (p.links) parts.push("has_link");
  if (p.code) parts.push("has_code");
  if (p.day) {
    const start = new Date(`${p.day}T00:00:00`);
    const end = new Date(start);
    end.setDate(end.getDate() + 1);
    const iso = (d) => d.toISOString().replace(/\.\d{3}Z$/, "Z");
    parts.push(`created_ts >= timestamp(${cel(iso(start))}) && created_ts < timestamp(${cel(iso(end))})`);
  }
  if (p.filter) parts.push(`(${p.filter})`);
  return parts.join(" && ");
}

export function localDay(iso) {
  const d = new Date(iso);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

// The theme: "system" (follow the OS), "light" or "dark", remembered on this
// device (issue 19, defect 10: dark followed the OS only). app.css keys the
// colours on <html data-theme>.
const THEME_KEY = "daybook.theme";
export const THEMES = ["system", "light", "dark"];
export function currentTheme() {
  const saved = localStorage.getItem(THEME_KEY);
  return THEMES.includes(saved) ? saved : "system";
}
export function applyTheme(theme = currentTheme()) {
  if (theme === "system") { localStorage.removeItem(THEME_KEY); delete document.documentElement.dataset.theme; }
  else { localStorage.setItem(THEME_KEY, theme); document.documentElement.dataset.theme = theme; }
}
