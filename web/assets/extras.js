// Screens loaded with import() when first opened, so the first load does not
// pay for them (decision 0034, weight budget of 0008): tag management
// (#/tags), the month calendar (#/calendar) and search results.
import { api, features } from "./api.js";
import { clear, confirmDialog, dialog, field, h, relativeTime, toast } from "./dom.js";
import { addStrings, t } from "./i18n.js";
import strings from "./i18n/en-extra.js";
import { filterFor, localDay, navigate, setParams, state } from "./store.js";

addStrings(strings);
document.head.append(h("link", { rel: "stylesheet", href: "/assets/extras.css" }));

// ---- Tags: rename, merge, delete across one's own memos -------------------

// Repeats the bounded server call until nothing is left (each call is one
// transaction of at most 200 memos); stops if a call changes nothing.
async function rewrite(path, body) {
  let changed = 0;
  for (;;) {
    const res = await api(`/memos/-/tags:${path}`, { method: "POST", body });
    changed += res.changed || 0;
    if (!res.remaining || !res.changed) return { changed, skipped: res.skipped || 0 };
  }
}

export function renderTags(container, { onChanged }) {
  const list = h("ul", { class: "tag-admin", "aria-label": t("tags") });
  let drawn = null;
  const draw = () => {
    const counts = state.stats?.tagCount || {};
    const names = Object.keys(counts).sort((a, b) => a.localeCompare(b));
    // Unchanged counts keep their rows: replacing them under a pointer
    // would drop a click made just then (the refresh below lands late).
    const shown = JSON.stringify(names.map((name) => [name, counts[name]]));
    if (shown === drawn) return;
    drawn = shown;
    clear(list, names.length ? names.map((name) => row(name, counts[name], names)) : h("li", { class: "muted" }, t("noTags")));
  };
  const done = async (message) => {
    toast(message);
    await onChanged();
    draw();
  };
  const row = (name, count, names) => h("li", { class: "tag-row" },
    h("a", { class: "tag-name", href: `#/?tag=${encodeURIComponent(name)}` }, `#${name}`),
    h("span", { class: "count" }, t(count === 1 ? "memoCountOne" : "memoCount", { n: count })),
    h("span", { class: "tag-actions" },
      h("button", { type: "button", class: "btn small", "aria-label": t("renameTagOf", { tag: name }), onclick: async () => {
        const to = await tagDialog(t("renameTagOf", { tag: name }), t("newTagName"), name);
        if (!to || to === name) return;
        try {
          const res = await rewrite("rename", { oldTag: name, newTag: to });
          await done(t("tagRenamed", { from: name, to, n: res.changed }));
        } catch { /* toasted */ }
      } }, t("rename")),
      h("button", { type: "button", class: "btn small", "aria-label": t("mergeTagOf", { tag: name }),
        disabled: names.length < 2, onclick: async () => {
          const others = names.filter((n) => n !== name && !n.startsWith(`${name}/`));
          const to = await tagDialog(t("mergeTagOf", { tag: name }), t("mergeInto"), "", others);
          if (!to) return;
          try {
            const res = await rewrite("rename", { oldTag: name, newTag: to });
            await done(t("tagMerged", { from: name, to, n: res.changed }));
          } catch { /* toasted */ }
        } }, t("merge")),
      h("button", { type: "button", class: "btn small danger", "aria-label": t("deleteTagOf", { tag: name }), onclick: async () => {
        if (!(await confirmDialog(t("confirmDeleteTag", { tag: name, n: count }), { confirmLabel: t("deleteTag"), danger: true }))) return;
        try {
          const res = await rewrite("delete", { tag: name });
          await done(t("tagDeleted", { tag: name, n: res.changed }));
        } catch { /* toasted */ }
      } }, t("deleteTag"))));
  draw();
  onChanged().then(draw); // fresh counts into this same list
  clear(container, h("h1", { class: "page-title" }, t("manageTags")), h("p", { class: "muted" }, t("tagsHelp")), list);
}

// A dialog asking for a tag: free text (rename) or one of `choices` (merge).
function tagDialog(title, label, value, choices = null) {
  return new Promise((resolve) => {
    let result = null;
    const input = choices
      ? h("select", { class: "select", required: true }, h("option", { value: "" }, t("chooseTag")),
        choices.map((c) => h("option", { value: c }, `#${c}`)))
      : h("input", { type: "text", class: "input", required: true, maxlength: "128", value,
        pattern: "#?[\\p{L}\\p{N}_\\-]+(/[\\p{L}\\p{N}_\\-]+)*", autocomplete: "off" });
    const form = h("form", { method: "dialog", onsubmit: (e) => {
      e.preventDefault();
      if (!input.checkValidity()) { input.reportValidity(); return; }
      result = input.value.trim().replace(/^#/, "");
      el.close("ok");
    } }, field(label, input, choices ? null : t("tagHint"))[0]);
    const el = dialog({ title, body: form, actions: [
      h("button", { class: "btn", type: "button", onclick: () => el.close("cancel") }, t("cancel")),
      h("button", { class: "btn primary", type: "button", onclick: () => form.requestSubmit() }, t("save")),
    ], onClose: () => resolve(result) });
    input.focus();
  });
}

// ---- Calendar: a month view; a day opens Home filtered to it --------------

export function renderCalendar(container, route) {
  const now = new Date();
  const [y, m] = (route.params.month || "").split("-").map(Number);
  const first = y && m ? new Date(y, m - 1, 1) : new Date(now.getFullYear(), now.getMonth(), 1);
  const key = (d) => `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}`;
  const shift = (n) => setParams({ month: key(new Date(first.getFullYear(), first.getMonth() + n, 1)) });
  const counts = new Map();
  for (const ts of state.stats?.memoDisplayTimestamps || []) {
    const day = localDay(ts);
    counts.set(day, (counts.get(day) || 0) + 1);
  }
  const title = first.toLocaleDateString(undefined, { month: "long", year: "numeric" });
  const head = [0, 1, 2, 3, 4, 5, 6].map((n) => h("span", { class: "cal-wd", role: "columnheader" },
    new Date(2026, 1, 1 + n).toLocaleDateString(undefined, { weekday: "short" }))); // 2026-02-01 is a Sunday
  const cells = [];
  for (let i = 0; i < first.getDay(); i++) cells.push(h("span", { class: "cal-day blank", "aria-hidden": "true" }));
  const today = localDay(now.toISOString());
  for (const d = new Date(first); d.getMonth() === first.getMonth(); d.setDate(d.getDate() + 1)) {
    const day = localDay(d.toISOString());
    const n = counts.get(day) || 0;
    const label = t("activityDay", { count: n, date: d.toLocaleDateString() });
    cells.push(h("button", { type: "button", class: `cal-day${n ? " has-memos" : ""}${day === today ? " today" : ""}`,
      "aria-label": label, title: label, dataset: { day },
      onclick: () => navigate("home", "", { day }) },
    h("span", { class: "cal-num" }, String(d.getDate())), n ? h("span", { class: "cal-count" }, String(n)) : null));
  }
  clear(container,
    h("h1", { class: "page-title" }, t("calendar")),
    h("div", { class: "cal-nav" },
      h("button", { type: "button", class: "btn small", "aria-label": t("prevMonth"), onclick: () => shift(-1) }, "‹"),
      h("h2", { class: "cal-title", "aria-live": "polite" }, title),
      h("button", { type: "button", class: "btn small", "aria-label": t("nextMonth"), onclick: () => shift(1) }, "›"),
      h("button", { type: "button", class: "btn small ghost", onclick: () => setParams({ month: null }) }, t("thisMonth"))),
    h("div", { class: "calendar", role: "grid", "aria-label": title }, head, cells),
    h("p", { class: "muted small" }, t("calendarHelp")));
}

// ---- Search results: what matched, how many, as results -------------------

// The snippet with the highlights inside it marked; offsets are code points.
function marked(result) {
  const snip = result.snippet || { start: 0, end: 0, text: "" };
  const chars = [...(snip.text || "")];
  const spans = (result.highlights || []).map((s) => [s.start - snip.start, s.end - snip.start])
    .filter(([a, b]) => b > 0 && a < chars.length).sort((p, q) => p[0] - q[0]);
  const out = [];
  let at = 0;
  for (let [a, b] of spans) {
    a = Math.max(a, at);
    b = Math.min(b, chars.length);
    if (b <= a) continue;
    out.push(chars.slice(at, a).join(""), h("mark", {}, chars.slice(a, b).join("")));
    at = b;
  }
  out.push(chars.slice(at).join(""));
  const before = snip.start > 0 ? "… " : "";
  const after = snip.end < [...(result.memo.content || "")].length ? " …" : "";
  return h("p", { class: "result-snippet" }, before, out, after);
}

function why(result) {
  if (result.matchedBy === "SEMANTIC") return t("whyMeaning");
  const terms = (result.matchedTerms || []).join(", ");
  return result.matchedBy === "BOTH" ? t("whyBoth", { terms }) : t("whyWords", { terms });
}

// Plain substring hits (a server without memos:search): highlight the query.
function substringResult(memo, query) {
  const content = memo.content || "";
  const at = content.toLowerCase().indexOf(query.toLowerCase());
  const start = Math.max(0, at - 60);
  const cp = (s) => [...s].length;
  const snippetText = content.slice(start, Math.min(content.length, at + query.length + 100));
  return { memo, matchedBy: "LEXICAL", matchedTerms: [query],
    snippet: { start: cp(content.slice(0, start)), end: cp(content.slice(0, start)) + cp(snippetText), text: snippetText },
    highlights: at < 0 ? [] : [{ start: cp(content.slice(0, at)), end: cp(content.slice(0, at)) + cp(query) }] };
}

export function renderSearch(root, route) {
  const query = route.params.q || "";
  const filter = filterFor(route);
  const count = h("p", { class: "result-count", "aria-live": "polite" }, t("searching"));
  const list = h("ol", { class: "results", "aria-label": t("searchResults") });
  const more = h("button", { class: "btn load-more", type: "button", hidden: true }, t("loadMore"));
  let token = "";
  const item = (r) => {
    const id = r.memo.name.replace(/^memos\//, "");
    const first = (r.memo.snippet || r.memo.content || "").split("\n")[0].slice(0, 80) || id;
    return h("li", { class: "result", dataset: { name: r.memo.name } },
      h("a", { class: "result-title", href: `#/m/${encodeURIComponent(id)}` }, first),
      h("div", { class: "result-meta muted small" },
        h("time", { datetime: r.memo.displayTime || r.memo.createTime }, relativeTime(r.memo.displayTime || r.memo.createTime)),
        " · ", h("span", { class: "result-why" }, why(r))),
      marked(r));
  };
  const load = async () => {
    more.disabled = true;
    try {
      if (features.search !== false) {
        try {
          const res = await api("/memos:search", { query: { query, filter, pageSize: 20, pageToken: token }, quiet: true });
          features.search = true;
          const n = res.totalSize ?? (res.results || []).length;
          count.textContent = res.noRelevantMatch || !n ? t("noResults", { query })
            : t(res.totalIsExact === false ? "resultCountAtLeast" : n === 1 ? "resultCountOne" : "resultCount", { n, query });
          list.append(...(res.results || []).map(item));
          token = res.nextPageToken || "";
          return;
        } catch (err) {
          if (features.search === true) { toast(err.message, "error"); throw err; }
          features.search = false;
        }
      }
      const text = `content.contains(${JSON.stringify(query)})`;
      const res = await api("/memos", { query: { pageSize: 20, pageToken: token, filter: [filter, text].filter(Boolean).join(" && ") } });
      list.append(...(res.memos || []).map((m) => item(substringResult(m, query))));
      token = res.nextPageToken || "";
      const n = list.children.length;
      count.textContent = !n ? t("noResults", { query }) : t(token ? "resultCountAtLeast" : n === 1 ? "resultCountOne" : "resultCount", { n, query });
    } catch {
      token = "";
    } finally {
      more.disabled = false;
      more.hidden = !token;
      performance.mark("search-results");
    }
  };
  more.addEventListener("click", load);
  root.replaceChildren(count, list, more);
  load();
}
