// The trash screen (#/trash) and Settings → "Your data" (export, import).
// Loaded with import() when opened, so the first load does not pay for it
// (decision 0025, weight budget). Everything goes through the public API:
// trash (0024), users/{me}:exportMemos and :importMemos (validate first).
import { ApiError, api, memoId } from "./api.js";
import { clear, confirmDialog, field, h, relativeTime, toast } from "./dom.js";
import { addStrings, t } from "./i18n.js";
import strings from "./i18n/en-data.js";
import { state } from "./store.js";

addStrings(strings);

const me = () => `/users/${encodeURIComponent(state.me.username)}`;
const label = (m) => (m.snippet || m.content || "").split("\n")[0].slice(0, 60) || memoId(m.name);

export function renderTrash(container) {
  const list = h("ul", { class: "trash-list", "aria-label": t("trash") }, h("li", { class: "muted" }, t("loading")));
  const more = h("button", { type: "button", class: "btn small", hidden: true }, t("loadMore"));
  const empty = h("button", { type: "button", class: "btn small danger", hidden: true, onclick: async () => {
    if (!(await confirmDialog(t("confirmEmptyTrash"), { confirmLabel: t("emptyTrash"), danger: true }))) return;
    try {
      const res = await api(`${me()}/trash:purge`, { method: "POST", body: {} });
      toast(t("purgedToast", { n: res.purgedCount ?? 0 }));
    } catch { /* toasted */ }
    load();
  } }, t("emptyTrash"));
  let token = "";
  const load = async (append = false) => {
    let res;
    try { res = await api(`${me()}/trash`, { query: { pageSize: 50, pageToken: append ? token : "" } }); } catch { return; }
    token = res.nextPageToken || "";
    const rows = (res.memos || []).map((m) => row(m, () => load()));
    if (append) list.append(...rows);
    else clear(list, ...(rows.length ? rows : [h("li", { class: "muted" }, t("trashEmpty"))]));
    more.hidden = !token;
    empty.hidden = !list.querySelector(".trash-row");
  };
  more.addEventListener("click", () => load(true));
  load();
  clear(container, h("h1", { class: "page-title" }, t("trash")),
    h("section", { class: "panel", "aria-label": t("trash") },
      h("div", { class: "row-actions" }, h("p", { class: "muted" }, t("trashHelp")), empty), list, more));
}

function row(m, reload) {
  const id = memoId(m.name);
  const name = label(m);
  return h("li", { class: "trash-row" },
    h("div", { class: "trash-what" }, h("div", { class: "trash-snippet" }, name),
      h("div", { class: "muted small" }, t("trashedAt", { time: relativeTime(m.trashTime) }),
        m.purgeTime ? ` · ${t("purgeAt", { date: new Date(m.purgeTime).toLocaleDateString() })}` : "")),
    h("div", { class: "row-actions" },
      h("button", { type: "button", class: "btn small", "aria-label": t("restoreOf", { memo: name }), onclick: async () => {
        try { await api(`/memos/${id}:undelete`, { method: "POST", body: {} }); toast(t("restoredToast")); } catch { /* toasted */ }
        reload();
      } }, t("restore")),
      h("button", { type: "button", class: "btn small danger", "aria-label": t("purgeOf", { memo: name }), onclick: async () => {
        if (!(await confirmDialog(t("confirmPurge"), { confirmLabel: t("purge"), danger: true }))) return;
        try { await api(`/memos/${id}:purge`, { method: "POST", body: {} }); toast(t("purgedToast", { n: 1 })); } catch { /* toasted */ }
        reload();
      } }, t("purge"))));
}

// Export is a plain download link (the session cookie goes with it); import
// always asks the server for the plan (validateOnly) before writing anything.
export function renderData(container) {
  const exportLink = h("a", { class: "btn", href: `/api/v1${me()}:exportMemos`, download: "" }, t("exportMemos"));
  const file = h("input", { type: "file", class: "input", accept: ".zip,application/zip" });
  const policy = h("select", { class: "select" },
    ["SKIP", "REPLACE", "DUPLICATE"].map((p) => h("option", { value: p }, t(`policy_${p}`))));
  const plan = h("div", { class: "import-plan", role: "status" });
  const go = h("button", { type: "button", class: "btn primary", hidden: true }, t("importNow"));
  const counts = (r) => ({ memos: r.memoCount, files: r.attachmentCount, create: r.inserted,
    skip: r.skipped, replace: r.replaced, dup: r.duplicated });
  const send = (validateOnly) => api(`${me()}:importMemos`, { method: "POST", body: file.files[0],
    headers: { "Content-Type": "application/zip" },
    query: { conflictPolicy: policy.value, validateOnly: validateOnly ? "true" : "" }, quiet: validateOnly });
  const check = async () => {
    go.hidden = true;
    if (!file.files.length) { plan.replaceChildren(); return; }
    plan.replaceChildren(t("loading"));
    try {
      const r = await send(true);
      plan.replaceChildren(h("p", {}, t("importPlan", counts(r))),
        r.warningCount ? h("p", { class: "muted small" }, t("importWarnings", { n: r.warningCount })) : "");
      go.hidden = false;
    } catch (err) {
      const problems = err instanceof ApiError ? err.details.map((d) => (typeof d === "string" ? d : d.message || JSON.stringify(d))) : [];
      plan.replaceChildren(h("p", { class: "form-error" }, t("importProblems")),
        h("ul", {}, (problems.length ? problems : [err.message || t("error")]).map((p) => h("li", {}, p))));
    }
  };
  file.addEventListener("change", check);
  policy.addEventListener("change", check);
  go.addEventListener("click", async () => {
    go.hidden = true;
    try {
      const r = await send(false);
      plan.replaceChildren(h("p", {}, t("importDone", counts(r))));
      toast(t("importDone", counts(r)));
      file.value = "";
    } catch { go.hidden = false; }
  });
  clear(container, h("div", { class: "stack" },
    h("p", { class: "muted" }, t("exportHelp")), h("div", {}, exportLink),
    field(t("importArchive"), file)[0], field(t("conflictPolicy"), policy)[0], plan, h("div", {}, go),
    h("p", {}, h("a", { href: "#/trash" }, t("openTrash")))));
}
