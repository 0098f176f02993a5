// The navigation column: pages, search, activity heatmap, tag tree, saved
// views and spaces. On phones it is a drawer opened from the top bar.
import { api, features } from "./api.js";
import { clear, confirmDialog, h, promptDialog, toast } from "./dom.js";
import { t } from "./i18n.js";
import { THEMES, applyTheme, currentRoute, currentTheme, filterFor, isAdmin, localDay, navigate, setParams, state } from "./store.js";
import { createSpaceDialog } from "./spaces.js";

const WEEKS = 14; // with the weekday labels, fits the 272 px sidebar

export function renderSidebar(container, route) {
  // Nothing it shows changed (several redraws follow a start: stats, spaces,
  // the late render): keep the nodes, so a click that began on a tag is not
  // lost to a redraw between press and release (defect 10).
  const inputs = [location.hash, state.stats, state.spaces, state.invitations, state.views,
    features.spaces, features.views, state.me?.role, localDay(new Date().toISOString())];
  if (container.drawn && inputs.every((v, i) => v === container.drawn[i])) return;
  container.drawn = inputs;
  const link = (name, label, arg = "") => {
    const current = route.name === name && (route.arg || "") === arg;
    return h("li", {}, h("a", { href: `#/${name === "home" ? "" : name}${arg ? "/" + encodeURIComponent(arg) : ""}`,
      class: "nav-link", "aria-current": current ? "page" : null }, label));
  };
  // A redraw (stats arriving) keeps what is being typed in the search box.
  const old = container.querySelector("#search");
  const typing = old && document.activeElement === old;
  const search = h("input", { type: "search", class: "input", id: "search", placeholder: t("searchPlaceholder"),
    "aria-label": t("search"), value: typing ? old.value : route.params.q || "", autocomplete: "off" });
  const searchForm = h("form", { role: "search", class: "search", onsubmit: (e) => {
    e.preventDefault();
    setParams({ q: search.value.trim() || null });
  } }, search);

  clear(container,
    h("div", { class: "brand" }, h("span", { class: "logo", "aria-hidden": "true" }, "◐"), t("appName")),
    searchForm,
    h("nav", { "aria-label": t("nav") }, h("ul", { class: "nav-list" },
      link("home", t("home")), link("explore", t("explore")), link("archived", t("archived")), link("trash", t("trash")), link("settings", t("settings")),
      isAdmin() ? link("admin", t("users")) : null)),
    features.spaces ? section(t("spaces"), h("div", {},
      state.invitations.length ? h("a", { class: "nav-link invite-link", href: "#/" },
        t("pendingInvitations", { n: state.invitations.length })) : null,
      state.spaces.length ? h("ul", { class: "nav-list" },
        state.spaces.map((s) => link("space", s.title || s.name, s.name.replace(/^spaces\//, "")))) : h("p", { class: "muted small" }, t("noSpaces")),
      h("button", { type: "button", class: "btn small", onclick: () => createSpaceDialog() }, t("newSpace")))) : null,
    section(t("activity"), h("div", {}, heatmap(route), h("a", { class: "nav-link small", href: "#/calendar" }, t("calendar")))),
    section(t("tags"), h("div", {}, tagTree(route), h("a", { class: "nav-link small", href: "#/tags" }, t("manageTags")))),
    features.views ? section(t("savedViews"), savedViews(route)) : null,
    h("p", { class: "muted small shortcuts" }, t("keyboardHelp")),
    themePicker(),
  );
  if (typing) search.focus();
}

// Light, dark or the system's choice, remembered on this device.
function themePicker() {
  const select = h("select", { class: "select small", onchange: () => applyTheme(select.value) },
    THEMES.map((v) => h("option", { value: v }, t(`theme_${v}`))));
  select.value = currentTheme();
  return h("label", { class: "theme-pick muted small" }, t("theme"), " ", select);
}

function section(title, body) {
  const id = `sec-${title.replace(/\W+/g, "-").toLowerCase()}`;
  return h("section", { class: "side-section", "aria-labelledby": id }, h("h2", { id, class: "side-title" }, title), body);
}

function heatmap(route) {
  const counts = new Map();
  for (const ts of state.stats?.memoDisplayTimestamps || []) {
    const day = localDay(ts);
    counts.set(day, (counts.get(day) || 0) + 1);
  }
  const today = new Date();
  const start = new Date(today);
  start.setDate(start.getDate() - (WEEKS * 7 - 1));
  start.setDate(start.getDate() - start.getDay()); // a Sunday, so rows are weekdays
  const cells = [];
  for (const d = new Date(start); d <= today; d.setDate(d.getDate() + 1)) {
    const day = localDay(d.toISOString());
    const n = counts.get(day) || 0;
    const level = n === 0 ? 0 : n < 2 ? 1 : n < 4 ? 2 : n < 7 ? 3 : 4;
    const label = t("activityDay", { count: n, date: d.toLocaleDateString() });
    cells.push(h("button", { type: "button", class: `day l${level}`, title: label, "aria-label": label,
      "aria-pressed": String(route.params.day === day), dataset: { day },
      onclick: () => setParams({ day: route.params.day === day ? null : day }) }));
  }
  // Month labels over the week columns, weekday labels beside the rows, and a
  // legend (issue 19: the heatmap had neither).
  const months = [];
  let last = -1;
  for (let i = 0; i < cells.length; i += 7) {
    const first = new Date(`${cells[i].dataset.day}T00:00:00`);
    const month = first.getMonth();
    months.push(h("span", { class: "heat-month" }, month !== last && (i > 0 || first.getDate() <= 7)
      ? first.toLocaleDateString(undefined, { month: "short" }) : ""));
    last = month;
  }
  const weekday = (n) => new Date(2026, 1, 1 + n).toLocaleDateString(undefined, { weekday: "short" }); // 2026-02-01 is a Sunday
  const days = h("div", { class: "heat-days", "aria-hidden": "true" }, [0, 1, 2, 3, 4, 5, 6].map((n) =>
    h("span", {}, n % 2 ? weekday(n) : "")));
  const legend = h("div", { class: "heat-legend muted small", "aria-hidden": "true" }, t("less"),
    [0, 1, 2, 3, 4].map((l) => h("span", { class: `day l${l} legend-cell` })), t("more"));
  return h("div", { class: "heat-wrap" },
    h("div", { class: "heat-months", "aria-hidden": "true" }, months),
    h("div", { class: "heat-body" }, days,
      h("div", { class: "heatmap", role: "group", "aria-label": t("activity") }, cells)),
    legend);
}

function tagTree(route) {
  const counts = state.stats?.tagCount || {};
  const names = Object.keys(counts).sort((a, b) => a.localeCompare(b));
  if (!names.length) return h("p", { class: "muted small" }, t("noTags"));
  const build = (prefix) => {
    const children = names.filter((n) => n.startsWith(prefix) && !n.slice(prefix.length).includes("/"));
    if (!children.length) return null;
    return h("ul", { class: "tag-tree" }, children.map((name) => h("li", {},
      h("button", { type: "button", class: "tag-link", "aria-pressed": String(route.params.tag === name),
        onclick: () => setParams({ tag: route.params.tag === name ? null : name }) },
        h("span", {}, `#${name.slice(prefix.length)}`), h("span", { class: "count" }, counts[name])),
      build(`${name}/`))));
  };
  return build("");
}

function savedViews(route) {
  const current = filterFor({ ...route, params: { ...route.params, q: "" } }, { scope: false });
  const list = h("ul", { class: "nav-list" }, state.views.map((view) => h("li", { class: "view-row" },
    h("button", { type: "button", class: "tag-link", "aria-pressed": String(route.params.filter === view.filter),
      onclick: () => navigate("home", "", { filter: view.filter, title: view.title }) }, view.title),
    h("button", { type: "button", class: "btn ghost small icon", "aria-label": t("deleteView", { title: view.title }),
      onclick: async () => {
        if (!(await confirmDialog(t("deleteView", { title: view.title }), { danger: true }))) return;
        await api(`/${view.name}`, { method: "DELETE" });
        await reloadViews();
      } }, "×"))));
  const save = current ? h("button", { type: "button", class: "btn small", onclick: async () => {
    const title = await promptDialog(t("saveView"), t("viewTitle"));
    if (!title) return;
    try {
      await api(`/users/${encodeURIComponent(state.me.username)}/views`, { method: "POST", body: { title, filter: current } });
      toast(t("viewSaved"));
      await reloadViews();
    } catch { /* toasted */ }
  } }, t("saveView")) : null;
  return h("div", {}, state.views.length ? list : h("p", { class: "muted small" }, t("noViews")), save);
}

export async function reloadViews() {
  if (!features.views) return;
  try {
    const res = await api(`/users/${encodeURIComponent(state.me.username)}/views`, { quiet: true });
    state.views = res.views || [];
  } catch { state.views = []; }
  document.dispatchEvent(new CustomEvent("sidebar-changed"));
}

export { currentRoute };
