// Boot and layout: who is signed in, which page the hash names, the sidebar,
// composer, filter chips and timeline, and the global keyboard shortcuts.
import { api, detectFeatures, features, onSignedOut, setCsrf } from "./api.js";
import { clear, h, toast } from "./dom.js";
import { icon } from "./icons.js";
import { t } from "./i18n.js";
import { renderAuth } from "./auth.js";
import { createComposer } from "./composer.js";
import { fetchRendered } from "./memo-card.js";
import { renderSidebar } from "./sidebar.js";
import { applyTheme, currentRoute, navigate, setParams, state } from "./store.js";
import { createTimeline } from "./timeline.js";
import { invitationsBanner, reloadSpaces, spacePage, spaceTitle } from "./spaces.js";
import { renderShared } from "./share.js";
import { contentNode } from "./memo-card.js";

applyTheme(); // before anything is drawn, so a chosen theme never flashes the other one
const app = document.getElementById("app");
let timeline = null;
let composer = null;
let layout = null;

async function boot() {
  document.querySelector(".skip-link").textContent = t("skipToContent");
  onSignedOut(() => { if (state.me) toast(t("signedOut"), "error"); state.me = null; setCsrf(""); showAuth(); });
  const route = currentRoute();
  if (route.name === "share") { state.profile = {}; renderShared(app, route.arg, contentNode); return; }
  const [profile, me] = await Promise.all([
    api("/instance/profile", { quiet: true }).catch(() => ({})),
    api("/auth/me", { quiet: true }).catch(() => null),
  ]);
  state.profile = profile;
  if (!me) { showAuth(); return; }
  await signedIn(me, { fresh: false });
}

function showAuth() {
  layout = null;
  renderAuth(app, { onSignedIn: (res) => signedIn(res, { fresh: true }) });
}

async function signedIn(res, { fresh }) {
  state.me = res.user;
  setCsrf(res.csrfToken);
  if (fresh && !location.hash.startsWith("#/settings")) history.replaceState(null, "", "#/");
  if (fresh) navigator.serviceWorker?.controller?.postMessage("signed-out"); // nothing of an earlier person offline
  buildLayout();
  render();
  performance.mark("editor-ready");
  // Optional endpoints (spaces, views, attachments), counts and the tag tree
  // arrive after the editor is usable; the editor then offers what exists.
  const [found] = await Promise.all([detectFeatures(state.me.username), reloadStats()]);
  state.spaces = found.spaces;
  state.views = found.views;
  // Invitations and the caller's access per space (which memos it may edit).
  if (features.spaces) await reloadSpaces(found.spaces);
  const now = currentRoute();
  // Pages whose content depends on the spaces draw again; others keep the editor.
  render({ keepComposer: !["space", "m"].includes(now.name) });
  // Installable and offline (decision 0034): the worker, the outbox, shares.
  navigator.serviceWorker?.register("/sw.js").catch(() => {});
  sendOutbox();
  if (window.caches) caches.has("daybook-share").then((has) => has && import("./outbox.js").then((m) => m.takeShared(composer)));
}

function sendOutbox() {
  if (state.me && localStorage.getItem(`daybook.outbox.${state.me.username}`)) {
    import("./outbox.js").then((m) => m.flush(state.me.username)).then((n) => n && timeline && render());
  }
}
// Back online: send what was queued, and ask again which optional endpoints
// exist (an app opened offline found none, so it offered no attachments).
window.addEventListener("online", async () => {
  sendOutbox();
  if (!state.me || !layout) return;
  const found = await detectFeatures(state.me.username);
  state.spaces = found.spaces;
  state.views = found.views;
  if (features.spaces) await reloadSpaces();
  composer?.refresh();
  renderSidebar(layout.sidebar, currentRoute());
});

let statsTurn = 0;
async function reloadStats() {
  const turn = ++statsTurn; // a late answer to an older request never overwrites a newer one
  let stats = null;
  try { stats = await api(`/users/${encodeURIComponent(state.me.username)}:getStats`, { quiet: true }); } catch { /* none */ }
  if (turn === statsTurn) state.stats = stats;
  if (layout) renderSidebar(layout.sidebar, currentRoute());
}

function buildLayout() {
  const sidebar = h("aside", { class: "sidebar", id: "sidebar", "aria-label": t("nav") });
  const toggle = h("button", { class: "btn ghost icon menu-toggle", type: "button", "aria-controls": "sidebar",
    "aria-expanded": "false", "aria-label": t("menu"), onclick: () => setDrawer(!document.body.classList.contains("drawer-open")) }, icon("menu"));
  const main = h("main", { class: "main", id: "main", tabindex: "-1" });
  // On phones search sits in the top bar, not only in the drawer (defect 10).
  const phoneSearch = h("input", { type: "search", class: "input", id: "top-search", placeholder: t("search"),
    "aria-label": t("searchMemos"), autocomplete: "off", enterkeyhint: "search" });
  const topbar = h("header", { class: "topbar" }, toggle,
    h("span", { class: "brand" }, h("span", { class: "logo", "aria-hidden": "true" }, "◐"), t("appName")),
    h("form", { role: "search", class: "top-search", onsubmit: (e) => {
      e.preventDefault();
      phoneSearch.blur();
      const q = phoneSearch.value.trim() || null;
      const route = currentRoute();
      if (["home", "explore", "archived", "space"].includes(route.name)) setParams({ q });
      else navigate("home", "", { q });
    } }, phoneSearch),
    h("button", { class: "btn ghost small", type: "button", onclick: signOut }, t("signOut")));
  const scrim = h("div", { class: "scrim", onclick: () => setDrawer(false) });
  app.replaceChildren(h("div", { class: "shell" }, sidebar, scrim, h("div", { class: "column" }, topbar, main)));
  layout = { sidebar, main, toggle, phoneSearch };
}

function setDrawer(open) {
  document.body.classList.toggle("drawer-open", open);
  layout?.toggle.setAttribute("aria-expanded", String(open));
  if (open) layout.sidebar.querySelector("a, button, input")?.focus();
}

async function signOut() {
  try { await api("/auth/signout", { method: "POST" }); } catch { /* ignore */ }
  navigator.serviceWorker?.controller?.postMessage("signed-out");
  state.me = null;
  setCsrf("");
  // The next sign-in starts at Home, not on the page this person left (defect
  // 10: signing out from Settings and in again landed on Settings).
  history.replaceState(null, "", "#/");
  showAuth();
}

function chips(route) {
  const p = route.params;
  const active = [];
  const chip = (label, key) => active.push(h("button", { type: "button", class: "chip active",
    "aria-label": t("removeFilter", { label }), onclick: () => setParams(Object.fromEntries([].concat(key).map((k) => [k, null]))) }, label, " ×"));
  if (p.q) chip(t("filterSearch", { query: p.q }), "q");
  if (p.tag) chip(t("filterTag", { tag: p.tag }), "tag");
  if (p.day) chip(t("filterDay", { date: p.day }), "day");
  if (p.filter) chip(t("filterView", { title: p.title || p.filter }), ["filter", "title"]);
  const toggle = (key, label) => h("button", { type: "button", class: `chip${p[key] ? " active" : ""}`,
    "aria-pressed": String(Boolean(p[key])), onclick: () => setParams({ [key]: p[key] ? null : "1" }) }, label);
  const vis = h("select", { class: "select chip-select", "aria-label": t("visibility"),
    onchange: () => setParams({ vis: vis.value || null }) },
  h("option", { value: "" }, t("anyVisibility")),
  ["PRIVATE", "PROTECTED", "PUBLIC", "SPACE"].filter((v) => v !== "SPACE" || features.spaces)
    .map((v) => h("option", { value: v }, t(`vis_${v}`))));
  vis.value = p.vis || "";
  return h("div", { class: "chips", role: "toolbar", "aria-label": t("filters") }, active,
    route.name === "home" && features.spaces && state.spaces.length ? toggle("spaces", t("filterMySpaces")) : null,
    toggle("pinned", t("filterPinned")), toggle("tasks", t("filterTasks")),
    toggle("links", t("filterLinks")), toggle("code", t("filterCode")), vis);
}

function render({ keepComposer = false } = {}) {
  if (!state.me || !layout) return;
  const route = currentRoute();
  setDrawer(false);
  renderSidebar(layout.sidebar, route);
  if (document.activeElement !== layout.phoneSearch) layout.phoneSearch.value = route.params.q || "";
  if (keepComposer && layout.main.childElementCount) {
    // Only the sidebar and chips depend on late data; keep the editor's focus and text.
    layout.main.querySelector(".chips")?.replaceWith(chips(route));
    composer?.refresh();
    // Space memos drawn before the access arrived now show the controls their
    // grants allow; the timeline itself is kept, so a filter chosen in the
    // first second is not fetched twice (defect 10) and an open menu stays open.
    if (state.spaces.length) timeline?.redrawPlaced?.();
    return;
  }
  timeline?.dispose();
  timeline = null;
  window.scrollTo(0, 0);
  if (route.name === "settings") {
    // Loaded when opened (first-load weight, decision 0039).
    import("./settings.js").then((m) => {
      if (currentRoute().name === "settings") m.renderSettings(layout.main, { onSignedIn: (res) => { state.me = res.user; setCsrf(res.csrfToken); } });
    });
    document.title = `${t("settings")} · ${t("appName")}`;
    return;
  }
  if (route.name === "admin") {
    import("./admin.js").then((m) => { if (currentRoute().name === "admin") m.renderAdmin(layout.main); });
    document.title = `${t("users")} · ${t("appName")}`;
    return;
  }
  if (route.name === "trash") {
    import("./data.js").then((m) => { if (currentRoute().name === "trash") m.renderTrash(layout.main); });
    document.title = `${t("trash")} · ${t("appName")}`;
    return;
  }
  if (route.name === "tags" || route.name === "calendar") {
    const title = t(route.name === "tags" ? "tags" : "calendar");
    // Drawn at once from the counts at hand, again when fresh ones arrive
    // (the tags screen refreshes its own list, so a rename's redraw is never lost).
    const draw = (m) => currentRoute().name === "calendar" && m.renderCalendar(layout.main, route);
    import("./extras.js").then((m) => {
      if (route.name === "tags") { if (currentRoute().name === "tags") m.renderTags(layout.main, { onChanged: reloadStats }); return; }
      draw(m);
      reloadStats().then(() => draw(m));
    });
    document.title = `${title} · ${t("appName")}`;
    return;
  }
  if (route.name === "m") {
    composer = null;
    // Loaded when opened (decision 0034: the first load's weight).
    import("./memo-page.js").then((m) => { if (currentRoute().name === "m") m.memoPage(layout.main, route.arg); });
    return;
  }
  const titles = { home: t("home"), explore: t("explore"), archived: t("archived"),
    space: spaceTitle(route.arg) || t("space") };
  document.title = `${titles[route.name] || t("home")} · ${t("appName")}`;
  if (route.name === "space") {
    composer = null;
    const memosView = () => {
      composer = makeComposer(route);
      timeline = createTimeline(route, { onCountsChanged: reloadStats });
      return h("div", { class: "space-memos" }, composer, chips(route), timeline);
    };
    clear(layout.main, spacePage(route, memosView));
    return;
  }
  const withComposer = route.name === "home";
  composer = withComposer ? makeComposer(route) : null;
  timeline = createTimeline(route, { onCountsChanged: reloadStats });
  clear(layout.main,
    h("h1", { class: "visually-hidden" }, titles[route.name] || t("home")),
    route.name !== "home" ? h("h1", { class: "page-title" }, titles[route.name] || "") : null,
    route.name === "home" ? h("div", { class: "banner-slot" }, invitationsBanner()) : null,
    composer, chips(route), timeline);
}

function makeComposer(route) {
  return createComposer({
    spaceUid: route.name === "space" ? route.arg : "",
    onSaved: async (saved) => {
      timeline?.addMemo(await fetchRendered(saved.name));
      reloadStats();
    },
  });
}


// Keyboard: "/" search, "n" new memo, j/k between memos, Esc closes menus and the drawer.
document.addEventListener("keydown", (e) => {
  const typing = e.target instanceof HTMLElement && (e.target.closest("input, textarea, select, [contenteditable]"));
  if (e.key === "Escape") {
    document.querySelectorAll("details.menu[open]").forEach((d) => { d.open = false; d.querySelector("summary")?.focus(); });
    if (document.body.classList.contains("drawer-open")) { setDrawer(false); layout?.toggle.focus(); }
    if (typing && (e.target.id === "search" || e.target.id === "top-search")) e.target.blur();
    return;
  }
  if (typing || e.ctrlKey || e.metaKey || e.altKey || !state.me) return;
  if (e.key === "/") { e.preventDefault(); document.getElementById(window.matchMedia("(max-width: 800px)").matches ? "top-search" : "search")?.focus(); }
  else if (e.key === "n" && composer) { e.preventDefault(); composer.focusEditor(); }
  else if (e.key === "j" || e.key === "k") {
    const cards = [...document.querySelectorAll(".memo-card")];
    if (!cards.length) return;
    const i = cards.indexOf(document.activeElement.closest?.(".memo-card"));
    const next = cards[Math.max(0, Math.min(cards.length - 1, i < 0 ? 0 : i + (e.key === "j" ? 1 : -1)))];
    e.preventDefault();
    next.focus();
    next.scrollIntoView({ block: "nearest" });
  }
});
document.addEventListener("click", (e) => {
  // One open menu at a time; clicking elsewhere closes it.
  document.querySelectorAll("details.menu[open]").forEach((d) => { if (!d.contains(e.target)) d.open = false; });
});
window.addEventListener("hashchange", () => {
  if (currentRoute().name === "share") { renderShared(app, currentRoute().arg, contentNode); return; }
  if (!layout && state.me) buildLayout();
  render();
});
document.addEventListener("sidebar-changed", () => layout && renderSidebar(layout.sidebar, currentRoute()));
document.addEventListener("features-changed", () => layout && renderSidebar(layout.sidebar, currentRoute()));
document.addEventListener("spaces-changed", () => {
  if (!layout) return;
  renderSidebar(layout.sidebar, currentRoute());
  layout.main.querySelector(".banner-slot")?.replaceChildren(invitationsBanner() || "");
  composer?.refresh();
});

boot();

export { navigate };
