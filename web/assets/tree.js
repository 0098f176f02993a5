// A space's tree of paths, shown as a tree: the caller's effective access per
// space (for "may I edit this memo?"), the known paths of a space (grants,
// memo placements, the defaults), and a picker that chooses a path from the
// tree instead of typing it. Paths are dotted labels; "~" is the caller's own
// home (home.<id>), which the server renders back as "~" in memos.
import { api } from "./api.js";
import { h, nextId } from "./dom.js";
import { t } from "./i18n.js";
import { state } from "./store.js";

// One label, as the server checks it (app/access/paths.py). Written so it is
// also valid under the RegExp "v" flag Chromium uses for `pattern`.
export const LABEL_PATTERN = "[A-Za-z0-9_\\-]{1,64}";
const LABEL_RE = new RegExp(`^${LABEL_PATTERN}$`);
export const validLabel = (s) => LABEL_RE.test(s);
export const LEVELS = { NONE: 0, READ: 1, WRITE: 2, OWNER: 3 };

const covers = (prefix, path) => prefix === "" || path === prefix || path.startsWith(prefix + ".");

// The caller's home in a space: its own OWNER grant on home.<id>.
function homeOf(grants) {
  return grants.find((g) => /^home\.\d+$/.test(g.path) && g.level === "OWNER")?.path || "";
}

// Canonical dotted form of a memo's tree ("~.x" → "home.<me>.x").
export function canonical(path, space) {
  const home = state.access[space]?.home;
  if (!path) return "";
  if (path === "~") return home || path;
  if (path.startsWith("~.")) return home ? home + path.slice(1) : path;
  return path;
}

// The caller's level at `path` in `space` (0 when unknown or none).
export function levelAt(space, path) {
  const access = state.access[space];
  if (!access) return 0;
  const target = canonical(path, space);
  let best = 0;
  for (const g of access.grants) if (covers(g.path, target)) best = Math.max(best, LEVELS[g.level] || 0);
  return best;
}

// The write rule as the client can know it (the server decides; this only
// decides which controls to offer): the creator with write at the memo's
// path, or anyone with owner there. Personal memos: the creator only.
export function canEdit(memo) {
  const own = state.me && memo.creator === state.me.name;
  if (!memo.space) return Boolean(own);
  const level = levelAt(memo.space, memo.tree || "");
  return level >= LEVELS.OWNER || (own && level >= LEVELS.WRITE);
}

export async function loadAccess(spaces) {
  await Promise.all(spaces.map(async (s) => {
    try {
      const res = await api(`/${s.name}/access`, { quiet: true });
      state.access[s.name] = { grants: res.grants || [], home: homeOf(res.grants || []) };
    } catch { delete state.access[s.name]; }
  }));
}

// Every path worth showing for a space: the defaults, the caller's grants,
// the grants it can see, and where memos already sit; ancestors included.
export function knownPaths(space, extra = []) {
  const set = new Set(["share"]);
  const home = state.access[space]?.home;
  if (home) set.add(home);
  for (const g of state.access[space]?.grants || []) set.add(g.path);
  for (const p of extra) if (p !== undefined && p !== null) set.add(canonical(p, space));
  const all = new Set([""]);
  for (const p of set) {
    if (!p) continue;
    const labels = p.split(".");
    for (let i = 1; i <= labels.length; i++) all.add(labels.slice(0, i).join("."));
  }
  return [...all].sort((a, b) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b)));
}

// Paths others made known: the grants the caller can see and where the
// space's memos sit (one request each, cached per space until a grant changes).
const spacePaths = new Map();
export function forgetPaths(space) { spacePaths.delete(space); }
export function loadSpacePaths(space) {
  if (!spacePaths.has(space)) {
    spacePaths.set(space, Promise.all([
      api(`/${space}/grants`, { quiet: true }).then((r) => r.grants || []).catch(() => []),
      api("/memos", { query: { filter: "space != null", pageSize: 100 }, quiet: true })
        .then((r) => (r.memos || []).filter((m) => m.space === space).map((m) => m.tree)).catch(() => []),
    ]).then(([grants, trees]) => ({ grants, trees })));
  }
  return spacePaths.get(space);
}

// A friendly label for a path: the root, "My home", or its last label.
export function pathLabel(path, space, homes = {}) {
  if (path === "") return t("treeRoot");
  const home = state.access[space]?.home;
  if (home && path === home) return t("myHome");
  if (path === "home") return t("homes");
  if (homes[path]) return t("homeOf", { user: homes[path] });
  return path.split(".").pop();
}

// Whose home each home.<id> is, from the OWNER grants the defaults create.
export function homeNames(grants) {
  const out = {};
  for (const g of grants) {
    if (/^home\.\d+$/.test(g.path) && g.level === "OWNER" && g.principal.startsWith("users/")) out[g.path] = g.principal.slice(6);
  }
  return out;
}

// A full path for display: "~" for one's own home, dotted otherwise.
export function displayPath(path, space) {
  if (path === "") return t("treeRoot");
  const home = state.access[space]?.home;
  if (home && (path === home || path.startsWith(home + "."))) return "~" + path.slice(home.length);
  return path;
}

// The path as the server wants it in a memo write ("~" for one's own home).
export function writePath(path, space) { return path === "" ? "" : displayPath(path, space); }

// A tree of paths (role="tree"), each node a button; `decorate(path)` adds
// per-node extras (grants, actions). Returns the element; `select(path)`
// marks one. A "New sub-path" control under the selected node adds a label.
export function treeView({ paths, space, selected = null, onSelect, decorate, allowAdd = true, label = t("tree"), homes = {} }) {
  const root = h("div", { class: "tree-view" });
  let current = selected;
  let known = [...paths];
  const draw = () => {
    const children = (parent) => known.filter((p) => p !== "" && (parent === ""
      ? !p.includes(".") : p.startsWith(parent + ".") && !p.slice(parent.length + 1).includes(".")));
    const node = (path, depth) => {
      const kids = children(path);
      const button = h("button", { type: "button", class: "tree-node", role: "treeitem",
        "aria-selected": String(current === path), "aria-level": String(depth), dataset: { path },
        title: displayPath(path, space),
        onclick: () => { current = path; draw(); onSelect?.(path); } },
      h("span", { class: "tree-mark", "aria-hidden": "true" }, kids.length ? "▾" : "•"),
      h("span", { class: "tree-label" }, pathLabel(path, space, homes)),
      homes[path] ? h("span", { class: "muted small tree-full", "aria-hidden": "true" }, path) : null);
      return h("li", { role: "none" }, h("div", { class: "tree-row" }, button, decorate?.(path)),
        kids.length ? h("ul", { role: "group" }, kids.map((k) => node(k, depth + 1))) : null);
    };
    const add = allowAdd && current !== null ? addForm() : null;
    root.replaceChildren(h("ul", { class: "tree", role: "tree", "aria-label": label }, node("", 1)), add);
  };
  function addForm() {
    const input = h("input", { class: "input", type: "text", pattern: LABEL_PATTERN, maxlength: "64",
      placeholder: t("newLabelPlaceholder"), "aria-label": t("newSubPath", { parent: displayPath(current, space) }) });
    const id = nextId("sub");
    const form = h("form", { class: "tree-add", id, onsubmit: (e) => {
      e.preventDefault();
      const value = input.value.trim();
      if (!validLabel(value)) { input.setCustomValidity(t("labelRule")); input.reportValidity(); return; }
      const path = current ? `${current}.${value}` : value;
      if (!known.includes(path)) known.push(path);
      known.sort();
      current = path;
      draw();
      onSelect?.(path);
    } }, input, h("button", { type: "submit", class: "btn small" }, t("addSubPath")));
    input.addEventListener("input", () => input.setCustomValidity(""));
    return form;
  }
  root.select = (path) => { current = path; draw(); };
  root.setPaths = (next) => { known = [...new Set([...next, ...known])]; draw(); };
  draw();
  return root;
}

// A compact control for forms: a button showing the chosen path that opens
// the tree in a popover-like panel. `value()` answers the canonical path.
export function pathPicker({ space, value = "share", extra = [], onChange, label = t("path") }) {
  let path = value;
  let spaceName = space;
  const summary = h("summary", { class: "btn small path-summary", "aria-label": `${label}: ${displayPath(path, spaceName)}` });
  const panel = h("div", { class: "menu-list path-panel" });
  const details = h("details", { class: "menu path-picker" }, summary, panel);
  const show = () => {
    summary.replaceChildren(h("span", { class: "muted" }, `${label}: `), displayPath(path, spaceName));
    summary.setAttribute("aria-label", `${label}: ${displayPath(path, spaceName)}`);
  };
  const build = async () => {
    const view = treeView({ paths: knownPaths(spaceName, [...extra, path]), space: spaceName,
      selected: path, onSelect: (p) => { path = p; show(); onChange?.(p); } });
    panel.replaceChildren(view);
    const more = await loadSpacePaths(spaceName);
    view.setPaths(knownPaths(spaceName, [...extra, path, ...more.grants.map((g) => g.path), ...more.trees]));
    view.select(path);
  };
  details.addEventListener("toggle", () => { if (details.open) build(); });
  // Clicks inside the tree must not close it (the document handler closes menus).
  show();
  details.value = () => path;
  details.setSpace = (next) => { spaceName = next; show(); };
  details.setValue = (p) => { path = p; show(); };
  return details;
}
