// A memo's own page (#/m/<id>): the memo with its comments open, then its
// relations, backlinks, share links (for its creator) and history, each
// loaded in parallel and each hidden when the server does not offer it.
import { api, ApiError, memoId } from "./api.js";
import { clear, confirmDialog, h, relativeTime, toast } from "./dom.js";
import { t } from "./i18n.js";
import { fetchRendered, memoCard } from "./memo-card.js";
import { navigate, state } from "./store.js";
import { shareLinksSection } from "./share.js";

export function memoPage(container, id) {
  const holder = h("div", { class: "memo-page" }, h("p", { class: "muted" }, t("loading")));
  clear(container, h("nav", { class: "crumbs" }, h("a", { href: "#/" }, `← ${t("home")}`)), holder);
  (async () => {
    let memo;
    try { memo = await fetchRendered(`memos/${id}`); } catch (err) {
      clear(holder, h("h1", { class: "page-title" }, t("memoNotFound")),
        h("p", { class: "muted" }, err instanceof ApiError && err.status === 404 ? t("memoNotFoundHelp") : err.message));
      return;
    }
    document.title = `${memo.property?.title || memo.snippet?.slice(0, 40) || t("memo")} · ${t("appName")}`;
    const draw = (m) => {
      const card = memoCard(m, { onChanged: draw, onRemoved: () => navigate("home"), openComments: true, page: true });
      const own = state.me && m.creator === state.me.name;
      clear(holder,
        h("h1", { class: "visually-hidden" }, t("memo")),
        card,
        relationsSection(m),
        own && m.visibility !== "SPACE" && !m.space && m.state === "NORMAL" ? shareLinksSection(m) : null,
        historySection(m, draw));
    };
    draw(memo);
  })();
}

const section = (title, ...body) => h("section", { class: "panel page-section", "aria-label": title }, h("h2", {}, title), ...body);
const memoLink = (rel) => h("a", { href: `#/m/${memoId(rel.name)}`, class: "rel-link" }, rel.snippet || memoId(rel.name));

function relationsSection(memo) {
  const refs = h("div", {}, h("p", { class: "muted small" }, t("loading")));
  const back = h("div", {}, h("p", { class: "muted small" }, t("loading")));
  (async () => {
    let relations = [];
    try { relations = (await api(`/memos/${memoId(memo.name)}/relations`, { quiet: true })).relations || []; } catch {
      refs.closest("section")?.remove(); return;
    }
    const refsOut = relations.filter((r) => r.type === "REFERENCE" && r.memo.name === memo.name);
    const refsIn = relations.filter((r) => r.type === "REFERENCE" && r.relatedMemo.name === memo.name);
    clear(refs, refsOut.length ? h("ul", { class: "rel-list" }, refsOut.map((r) => h("li", {}, memoLink(r.relatedMemo))))
      : h("p", { class: "muted small" }, t("noReferences")));
    clear(back, refsIn.length ? h("ul", { class: "rel-list" }, refsIn.map((r) => h("li", {}, memoLink(r.memo))))
      : h("p", { class: "muted small" }, t("noBacklinks")));
  })();
  return h("section", { class: "panel page-section", "aria-label": t("links") },
    h("h2", {}, t("references")), refs, h("h2", {}, t("backlinks")), back);
}

// Versions newest first; each can be shown, compared with the one before it,
// and any two compared by choosing them ("from" and "to": the server's diff,
// or a line diff computed here from the two contents). Revert is offered when
// the server says the caller may write the memo now (`canEdit` in the
// history answer: the write rule decides, not this client).
function historySection(memo, redraw) {
  const body = h("div", {}, h("p", { class: "muted small" }, t("loading")));
  const el = section(t("history"), body);
  (async () => {
    let res;
    try { res = await api(`/memos/${memoId(memo.name)}/history`, { query: { pageSize: 50 }, quiet: true }); } catch {
      el.remove(); return;
    }
    const versions = res.versions || [];
    if (!versions.length) { clear(body, h("p", { class: "muted small" }, t("noHistory"))); return; }
    const view = h("div", { class: "version-view" });
    const mayRevert = res.canEdit === true;
    clear(body, h("ol", { class: "version-list" }, versions.map((v, i) => {
      const previous = versions[i + 1];
      return h("li", { class: "version-row" },
        h("span", { class: "version-what" }, h("strong", {}, t("versionN", { n: v.version })), " ",
          t(`kind_${v.kind}`), " · ", v.actor.replace(/^users\//, ""), " · ",
          h("time", { datetime: v.createTime, title: new Date(v.createTime).toLocaleString() }, relativeTime(v.createTime))),
        h("span", { class: "row-actions" },
          h("button", { type: "button", class: "btn ghost small", onclick: () => showVersion(view, v) }, t("show")),
          previous ? h("button", { type: "button", class: "btn ghost small", "aria-label": t("diffVersion", { n: v.version }),
            onclick: () => showDiff(view, previous, v, memo) }, t("diff")) : null,
          mayRevert && i > 0 ? h("button", { type: "button", class: "btn ghost small", "aria-label": t("revertTo", { n: v.version }),
            onclick: () => revert(memo, v, redraw) }, t("revert")) : null));
    })), versions.length > 1 ? compareControls(versions, view, memo) : null, view);
  })();
  return el;
}

// Two selects, "from" (default: the version before the newest) and "to"
// (default: the newest), and a Compare button: any two versions, either way round.
function compareControls(versions, view, memo) {
  const pick = (label, chosen) => h("select", { class: "select small-select", "aria-label": label },
    versions.map((v) => h("option", { value: String(v.version), selected: v === chosen }, t("versionN", { n: v.version }))));
  const from = pick(t("compareFrom"), versions[1]);
  const to = pick(t("compareTo"), versions[0]);
  const byNumber = (select) => versions.find((v) => String(v.version) === select.value);
  return h("div", { class: "row-actions version-compare", role: "group", "aria-label": t("compareVersions") },
    h("span", { class: "muted small" }, t("compareFrom")), from,
    h("span", { class: "muted small" }, t("compareTo")), to,
    h("button", { type: "button", class: "btn ghost small",
      onclick: () => showDiff(view, byNumber(from), byNumber(to), memo) }, t("compare")));
}

function showVersion(view, v) {
  clear(view, h("h3", {}, t("versionN", { n: v.version })), h("pre", { class: "version-content" }, v.content));
}

// The server's diff (history:diff, with the changed fields) when it has
// one; otherwise a line diff of the two contents computed here.
let serverDiff = true;
async function showDiff(view, a, b, memo) {
  let lines = null;
  let fields = [];
  if (serverDiff) {
    try {
      const res = await api(`/memos/${memoId(memo.name)}/history:diff`, { query: { from: a.version, to: b.version }, quiet: true });
      lines = (res.contentDiff || "").split("\n").filter((l) => l && !/^(---|\+\+\+|@@)/.test(l))
        .map((l) => [l[0] === "+" || l[0] === "-" ? l[0] : " ", l.slice(1)]);
      fields = res.changedFields || [];
    } catch (err) {
      if (err instanceof ApiError && (err.unsupported || err.status === 404)) serverDiff = false;
      else { toast(err.message || t("error"), "error"); return; }
    }
  }
  if (!lines) lines = diffLines(a.content.split("\n"), b.content.split("\n"));
  const title = t("diffTitle", { a: a.version, b: b.version });
  clear(view, h("h3", {}, title),
    fields.length ? h("ul", { class: "changed-fields" }, fields.map((f) =>
      h("li", {}, t("fieldChanged", { field: f.field, from: f.from || "∅", to: f.to || "∅" })))) : null,
    lines.length ? h("pre", { class: "diff", "aria-label": title }, lines.map(([op, text]) =>
      h("span", { class: `diff-line diff-${op === "+" ? "add" : op === "-" ? "del" : "same"}` }, `${op} ${text}\n`)))
      : h("p", { class: "muted small" }, t("noContentChange")));
}

// Revert: the server's endpoint when it has one, else an ordinary edit that
// writes the old content back (recorded as a new version either way).
async function revert(memo, v, redraw) {
  if (!(await confirmDialog(t("confirmRevert", { n: v.version }), { confirmLabel: t("revert") }))) return;
  const id = memoId(memo.name);
  try {
    try {
      await api(`/memos/${id}:revert`, { method: "POST", body: { version: v.version }, quiet: true,
        headers: { "If-Match": memo.etag } });
    } catch (err) {
      if (!(err instanceof ApiError && err.unsupported)) throw err;
      await api(`/memos/${id}`, { method: "PATCH", query: { updateMask: "content" }, body: { content: v.content },
        headers: { "If-Match": memo.etag }, quiet: true });
    }
    toast(t("reverted", { n: v.version }));
    redraw(await fetchRendered(memo.name));
  } catch (err) { toast(err.message || t("error"), "error"); }
}

// A small LCS line diff (memos are short; quadratic is fine up to a few
// hundred lines, beyond that it falls back to "all removed, all added").
export function diffLines(a, b) {
  if (a.length * b.length > 250000) return [...a.map((l) => ["-", l]), ...b.map((l) => ["+", l])];
  const n = a.length; const m = b.length;
  const dp = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) {
    dp[i][j] = a[i] === b[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
  }
  const out = [];
  let i = 0; let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push([" ", a[i]]); i++; j++; }
    else if (dp[i + 1][j] >= dp[i][j + 1]) out.push(["-", a[i++]]);
    else out.push(["+", b[j++]]);
  }
  while (i < n) out.push(["-", a[i++]]);
  while (j < m) out.push(["+", b[j++]]);
  return out;
}
