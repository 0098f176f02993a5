// Tiny DOM helpers: elements are built with h(), never from HTML strings
// (the only HTML the client inserts is the server's sanitised rendering).
import { t } from "./i18n.js";

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key in el && typeof value !== "string") el[key] = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let uid = 0;
export const nextId = (prefix = "id") => `${prefix}-${++uid}`;

// A labelled form field: returns [wrapper, control].
export function field(label, control, hint) {
  control.id ||= nextId("f");
  const hintEl = hint ? h("small", { class: "hint", id: `${control.id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return [h("div", { class: "field" }, h("label", { for: control.id }, label), control, hintEl), control];
}

// Toasts: one polite live region for news, errors are announced assertively.
// `action` ({label, run}) adds a button, e.g. Undo; such a toast stays longer.
export function toast(message, kind = "info", action = null) {
  const region = document.getElementById(kind === "error" ? "alerts" : "toasts");
  const el = h("div", { class: `toast toast-${kind}${action ? " with-action" : ""}` }, message,
    action ? h("button", { type: "button", class: "toast-action", onclick: () => { el.remove(); action.run(); } }, action.label) : null);
  region.append(el);
  setTimeout(() => el.remove(), action ? 8000 : kind === "error" ? 6000 : 3000);
}

// A modal built on <dialog>: Esc closes it natively, focus returns afterwards.
export function dialog({ title, body, actions = [], onClose }) {
  const previous = document.activeElement;
  const titleId = nextId("dlg");
  const el = h("dialog", { class: "dialog", "aria-labelledby": titleId },
    h("h2", { id: titleId }, title),
    body,
    h("div", { class: "dialog-actions" }, actions));
  el.addEventListener("close", () => {
    el.remove();
    onClose?.(el.returnValue);
    if (previous instanceof HTMLElement) previous.focus();
  });
  document.body.append(el);
  el.showModal();
  return el;
}

export function confirmDialog(message, { confirmLabel = t("confirm"), danger = false } = {}) {
  return new Promise((resolve) => {
    let ok = false;
    const yes = h("button", { class: danger ? "btn danger" : "btn primary", type: "button",
      onclick: () => { ok = true; el.close("ok"); } }, confirmLabel);
    const no = h("button", { class: "btn", type: "button", onclick: () => el.close("cancel") }, t("cancel"));
    const el = dialog({ title: t("confirm"), body: h("p", {}, message), actions: [no, yes],
      onClose: () => resolve(ok) });
    no.focus();
  });
}

export function promptDialog(title, label) {
  return new Promise((resolve) => {
    let value = null;
    const input = h("input", { type: "text", required: true, maxlength: "120" });
    const form = h("form", { method: "dialog", onsubmit: (e) => {
      e.preventDefault();
      if (input.value.trim()) { value = input.value.trim(); el.close("ok"); }
    } }, field(label, input)[0]);
    const el = dialog({ title, body: form, actions: [
      h("button", { class: "btn", type: "button", onclick: () => el.close("cancel") }, t("cancel")),
      h("button", { class: "btn primary", type: "button", onclick: () => form.requestSubmit() }, t("save")),
    ], onClose: () => resolve(value) });
    input.focus();
  });
}

export async function copyText(text, message = t("copied")) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // Clipboard API needs a secure context; fall back to a selection copy.
    const area = h("textarea", { class: "visually-hidden" }, text);
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  toast(message);
}

export function relativeTime(iso) {
  const date = new Date(iso);
  const seconds = (Date.now() - date.getTime()) / 1000;
  if (seconds < 60) return t("justNow");
  if (seconds < 3600) return t("minutesAgo", { n: Math.floor(seconds / 60) });
  if (seconds < 86400) return t("hoursAgo", { n: Math.floor(seconds / 3600) });
  return date.toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
}

export function debounce(fn, ms) {
  let timer;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
}
