// The memo editor: Markdown with a live preview, task insertion, #tag
// autocomplete, paste/drop attachments, visibility, a place in a space (for
// any visibility, decision 0030), Ctrl/Cmd+Enter to save and a draft kept in
// localStorage.
import { ApiError, api, features, memoId } from "./api.js";
import { confirmDialog, h, nextId, toast, debounce } from "./dom.js";
import { t } from "./i18n.js";
import { renderMarkdown } from "./markdown.js";
import { localDay, state } from "./store.js";
import { icon } from "./icons.js";
import { LEVELS, canonical, pathPicker, writePath } from "./tree.js";

const VISIBILITIES = ["PRIVATE", "PROTECTED", "PUBLIC", "SPACE"];
// A client-chosen id (memoId, attachmentId), so a retry never duplicates.
const randomId = () => [...crypto.getRandomValues(new Uint8Array(11))].map((b) => b.toString(16).padStart(2, "0")).join("");

export function createComposer({ memo = null, onSaved, onCancel, autofocus = false, spaceUid = "" } = {}) {
  const editing = Boolean(memo);
  const draftKey = editing ? null : `daybook.draft.${state.me.username}`;
  const listId = nextId("tags");
  const textarea = h("textarea", {
    class: "editor-input", rows: editing ? "6" : "3",
    // No keyboard shortcut on phones, where there is no Ctrl key (defect 10).
    placeholder: t(matchMedia("(max-width: 800px), (pointer: coarse)").matches ? "editorPlaceholderTouch" : "editorPlaceholder"),
    "aria-label": t("editorLabel"), "aria-autocomplete": "list", "aria-controls": listId,
    "aria-expanded": "false", spellcheck: "true",
  });
  textarea.value = memo ? memo.content : (localStorage.getItem(draftKey) || "");
  const preview = h("div", { class: "memo-content preview", hidden: true, "aria-live": "polite" });
  const suggestions = h("ul", { class: "suggestions", id: listId, role: "listbox", hidden: true, "aria-label": t("tagSuggestions") });
  const pending = memo ? memo.attachments.map((a) => a.name) : [];
  // Attachments as chips, not Markdown lines in the text (defect 6): the card
  // shows them once, below the content.
  const fileList = h("ul", { class: "pending-files", "aria-label": t("attachments") });
  // Files chosen offline, kept in IndexedDB until their memo is sent (decision
  // 0039): named by the attachment id they will be uploaded with.
  const kept = new Set();
  const fileChip = (name, label) => {
    const li = h("li", { class: kept.has(name) ? "chip kept" : "chip" }, kept.has(name) ? t("fileKept", { name: label }) : label, " ",
      h("button", { type: "button", class: "link", "aria-label": t("removeFile", { name: label }), onclick: () => {
        pending.splice(pending.indexOf(name), 1);
        li.remove();
        if (kept.delete(name)) import("./outbox.js").then((m) => m.dropFile(state.me.username, name));
      } }, "×"));
    fileList.append(li);
  };
  memo?.attachments.forEach((a) => fileChip(a.name, a.filename));
  const keep = (f) => { pending.push(f.name); kept.add(f.name); fileChip(f.name, f.filename); };
  // The draft's kept files come back after a reload, like its text.
  if (!editing && localStorage.getItem(`daybook.files.${state.me.username}`)) {
    import("./outbox.js").then((m) => m.draftFiles(state.me.username)).then((files) => files.forEach(keep)).catch(() => {});
  }

  // Visibility (with the instance's rules) and, separately, where the memo
  // is placed: no space, or a space where the caller may write and a path in
  // its tree. Placement is independent of visibility (decision 0030): a
  // Public memo can live in a space; only the Space visibility needs one.
  // Refilled once optional features are known.
  const visSelect = h("select", { class: "select", "aria-label": t("visibility") });
  const spaceSelect = h("select", { class: "select", "aria-label": t("space") });
  // The default is Private every time (issue 19, defect 3), not the last choice.
  const wanted = memo?.visibility || (spaceUid ? "SPACE" : "PRIVATE");
  const wantedSpace = memo?.space || (spaceUid ? `spaces/${spaceUid}` : "");
  // Spaces the caller may write in: any grant of WRITE or more (its own home's
  // OWNER grant included). Access not loaded yet: offered, the server decides.
  const writable = () => state.spaces.filter((s) => s.name === memo?.space || !state.access[s.name]
    || state.access[s.name].grants.some((g) => (LEVELS[g.level] || 0) >= LEVELS.WRITE));
  let chosen = false; // the person picked a visibility or space: keep it across refills
  function fillChoices() {
    const spaces = features.spaces ? writable() : [];
    const allowed = VISIBILITIES.filter((v) =>
      (v !== "PUBLIC" || !state.profile?.disallowPublicVisibility || memo?.visibility === "PUBLIC") &&
      (v !== "SPACE" || spaces.length));
    const current = chosen ? visSelect.value : wanted;
    visSelect.replaceChildren(...allowed.map((v) => h("option", { value: v }, t(`vis_${v}`))));
    visSelect.value = allowed.includes(current) ? current : allowed.includes(wanted) ? wanted : "PRIVATE";
    const space = chosen ? spaceSelect.value : wantedSpace;
    spaceSelect.replaceChildren(h("option", { value: "" }, t("noSpace")),
      ...spaces.map((s) => h("option", { value: s.name }, s.title || s.name)));
    spaceSelect.value = spaces.some((s) => s.name === space) ? space : "";
    spaceSelect.hidden = !spaces.length;
  }
  fillChoices();
  // Where in the space's tree: chosen from the tree ("share" preselected),
  // never typed as a free-text path.
  const initialPath = memo?.tree ? canonical(memo.tree, memo.space) : "share";
  const pathInput = pathPicker({ space: spaceSelect.value || wantedSpace, value: initialPath, label: t("path") });
  const spaceRow = h("span", { class: "space-row" }, spaceSelect, pathInput);
  // The path is asked for only when a space is chosen; the Space visibility
  // needs one, so choosing it places the memo in the first space, and taking
  // the memo out of every space makes a Space memo Private (never wider).
  const syncSpace = () => { pathInput.hidden = !spaceSelect.value; };
  spaceSelect.addEventListener("change", () => {
    chosen = true;
    pathInput.setSpace(spaceSelect.value);
    if (!spaceSelect.value && visSelect.value === "SPACE") visSelect.value = "PRIVATE";
    syncSpace();
  });
  visSelect.addEventListener("change", () => {
    chosen = true;
    if (visSelect.value === "SPACE" && !spaceSelect.value && spaceSelect.options.length > 1) {
      spaceSelect.selectedIndex = 1;
      pathInput.setSpace(spaceSelect.value);
    }
    syncSpace();
  });
  syncSpace();

  const saveButton = h("button", { class: "btn primary", type: "submit", title: t("saveHint") }, t("save"));
  const previewButton = h("button", { class: "btn ghost", type: "button", "aria-pressed": "false",
    onclick: () => togglePreview() }, t("preview"));
  const fileInput = h("input", { type: "file", multiple: true, class: "visually-hidden", tabindex: "-1",
    "aria-hidden": "true", onchange: () => { upload([...fileInput.files]); fileInput.value = ""; } });
  const attachButton = h("button", { class: "btn ghost icon", type: "button", title: t("attach"), "aria-label": t("attach"),
    hidden: !features.attachments, onclick: () => fileInput.click() }, icon("clip"));
  const taskButton = h("button", { class: "btn ghost icon", type: "button", title: t("addTask"),
    "aria-label": t("addTask"), onclick: () => insertAtLineStart("- [ ] ") }, icon("task"));

  // The memo's date (its display time), e.g. to backfill yesterday; empty: now.
  const shown = memo ? localDay(memo.displayTime || memo.createTime) : "";
  const dateInput = h("input", { type: "date", class: "input date-input", "aria-label": t("memoDate"), title: t("memoDate"), value: shown });

  const form = h("form", { class: editing ? "composer editing" : "composer", onsubmit: (e) => { e.preventDefault(); save(); } },
    h("div", { class: "editor-wrap" }, textarea, suggestions, preview, fileList),
    h("div", { class: "composer-bar" },
      h("div", { class: "composer-tools" }, taskButton, attachButton, fileInput, previewButton, dateInput),
      h("div", { class: "composer-submit" }, visSelect, spaceRow,
        editing ? h("button", { class: "btn", type: "button", onclick: () => cancelEdit() }, t("cancel")) : null,
        saveButton)));

  function togglePreview(force) {
    const show = force ?? preview.hidden;
    preview.hidden = !show;
    textarea.hidden = show;
    previewButton.textContent = show ? t("write") : t("preview");
    previewButton.setAttribute("aria-pressed", String(show));
    if (show) preview.replaceChildren(renderMarkdown(textarea.value));
    else textarea.focus();
  }

  function insertAtLineStart(text) {
    const pos = textarea.selectionStart;
    const before = textarea.value.slice(0, pos);
    const lineStart = before.lastIndexOf("\n") + 1;
    const needsNewline = before.slice(lineStart).trim() !== "";
    const insert = needsNewline ? `\n${text}` : text;
    const at = needsNewline ? pos : lineStart;
    textarea.setRangeText(insert, at, at, "end");
    textarea.focus();
    saveDraft();
  }

  const saveDraft = debounce(() => {
    if (!draftKey) return;
    if (textarea.value.trim()) localStorage.setItem(draftKey, textarea.value);
    else localStorage.removeItem(draftKey);
  }, 250);

  // Leaving an edit with changes asks first (defect 8: Esc used to discard them).
  async function cancelEdit() {
    if (textarea.value === memo.content || await confirmDialog(t("discardChanges"), { confirmLabel: t("discard"), danger: true })) onCancel?.();
  }

  async function save() {
    if (saveButton.disabled) return; // a second Ctrl+Enter during a save creates nothing twice
    saveButton.disabled = true;
    // A save pressed while a file is still uploading waits for it, so the
    // file is bound to the memo instead of silently left out.
    if (uploading.size) { saveButton.textContent = t("saving"); await Promise.allSettled([...uploading]); }
    const content = textarea.value;
    if (!content.trim() && !pending.length) { saveButton.disabled = false; saveButton.textContent = t("save"); textarea.focus(); return; }
    saveButton.textContent = t("saving");
    const body = { content, visibility: visSelect.value };
    // The place is sent on a create in a space, and on an edit only when it
    // changed (a memo whose place the caller cannot see shows none: unchanged).
    const place = spaceSelect.value ? { space: spaceSelect.value, tree: writePath(pathInput.value(), spaceSelect.value) } : { space: "" };
    if (editing ? place.space !== (memo.space || "") || (place.space && pathInput.value() !== initialPath) : place.space) {
      Object.assign(body, place);
      if (editing && !place.space) body.tree = "";
    }
    if (dateInput.value && dateInput.value !== shown) {
      const at = new Date(memo ? memo.displayTime || memo.createTime : Date.now());
      const [y, m, d] = dateInput.value.split("-").map(Number);
      at.setFullYear(y, m - 1, d);
      body.displayTime = at.toISOString();
    }
    // A client id on every create, so a retry (the offline outbox) never duplicates.
    const clientId = randomId();
    try {
      let saved;
      if (editing) {
        const mask = Object.keys(body).join(",");
        saved = await api(`/memos/${memoId(memo.name)}`, { method: "PATCH", body, query: { updateMask: mask },
          headers: { "If-Match": memo.etag } });
      } else {
        // Attachments are bound in the create itself (one transaction), so a
        // memo queued offline keeps the files uploaded before the line dropped.
        if (features.attachments && pending.length) body.attachments = pending.map((name) => ({ name }));
        // Kept files are uploaded first (under their ids), then the memo names them.
        const files = pending.filter((name) => kept.has(name));
        const outbox = files.length ? await import("./outbox.js") : null;
        try {
          await outbox?.sendFiles(files);
          saved = await api("/memos", { method: "POST", body, query: { memoId: clientId } });
          await outbox?.forgetFiles(state.me.username, files).catch(() => {}); // the memo exists: done
        } catch (err) {
          if (err instanceof ApiError) { if (err.file) toast(err.message || t("error"), "error"); throw err; }
          await (outbox || await import("./outbox.js")).enqueue(state.me.username, clientId, body, files); // offline: sent later
          saved = null;
        }
      }
      if (saved && editing && features.attachments && pending.join() !== memo.attachments.map((a) => a.name).join()) {
        await api(`/memos/${memoId(saved.name)}/attachments`, { method: "PATCH",
          body: { attachments: pending.map((name) => ({ name })) }, quiet: true }).catch(() => {});
      }
      if (!editing) {
        dateInput.value = "";
        chosen = false;
        visSelect.value = wanted; // the default every time, never the last choice (defect 3)
        spaceSelect.value = [...spaceSelect.options].some((o) => o.value === wantedSpace) ? wantedSpace : "";
        pathInput.setSpace(spaceSelect.value);
        pathInput.setValue(initialPath);
        syncSpace();
        textarea.value = "";
        pending.length = 0;
        kept.clear();
        fileList.replaceChildren();
        localStorage.removeItem(draftKey);
        togglePreview(false);
      }
      if (saved) onSaved?.(saved);
    } catch {
      // the toast already told the user; keep the text so nothing is lost
    } finally {
      saveButton.disabled = false;
      saveButton.textContent = t("save");
    }
  }

  const uploading = new Set();
  function upload(files) {
    const job = uploadAll(files);
    uploading.add(job);
    return job.finally(() => uploading.delete(job));
  }

  async function uploadAll(files) {
    if (!features.attachments) { toast(t("attachUnavailable"), "error"); return; }
    // Offline, a new memo's files are kept here and sent with it (edits are not
    // queued: say so plainly instead of a generic network error).
    const keepOffline = async (file, id = randomId()) => {
      if (editing) { toast(t("attachOffline"), "error"); return; }
      keep(await (await import("./outbox.js")).keepFile(state.me.username, file, id));
    };
    for (const file of files) {
      if (!navigator.onLine) { await keepOffline(file); continue; }
      const busy = h("li", { class: "chip" }, t("attaching", { name: file.name }));
      fileList.append(busy);
      const content = await new Promise((resolve) => {
        const reader = new FileReader();
        reader.onload = () => resolve(String(reader.result).split(",", 2)[1] || "");
        reader.readAsDataURL(file);
      });
      // Under an id of ours: if the answer is lost, the kept file's retry
      // under the same id finds this upload instead of making a second one.
      const id = randomId();
      try {
        const att = await api("/attachments", { method: "POST", quiet: true, query: { attachmentId: id },
          body: { filename: file.name, type: file.type || "application/octet-stream", content } });
        pending.push(att.name);
        fileChip(att.name, att.filename || file.name);
      } catch (err) {
        if (err instanceof ApiError) toast(err.message || t("error"), "error");
        else await keepOffline(file, id); // no answer: kept, as offline
      } finally { busy.remove(); }
    }
  }

  // #tag autocomplete from the user's tags.
  let active = -1;
  let matches = [];
  function tagQuery() {
    const before = textarea.value.slice(0, textarea.selectionStart);
    const m = /(?:^|[\s(])#([\w\-/]*)$/u.exec(before);
    return m ? m[1] : null;
  }
  function showSuggestions() {
    const q = tagQuery();
    const all = Object.keys(state.stats?.tagCount || {});
    matches = q === null ? [] : all.filter((tag) => tag.toLowerCase().startsWith(q.toLowerCase()) && tag !== q).slice(0, 8);
    active = matches.length ? 0 : -1;
    renderSuggestions();
  }
  function renderSuggestions() {
    suggestions.replaceChildren(...matches.map((tag, i) => h("li", {
      id: `${listId}-${i}`, role: "option", class: "suggestion", "aria-selected": String(i === active),
      onmousedown: (e) => { e.preventDefault(); accept(i); },
    }, `#${tag}`)));
    suggestions.hidden = !matches.length;
    textarea.setAttribute("aria-expanded", String(Boolean(matches.length)));
    if (active >= 0) textarea.setAttribute("aria-activedescendant", `${listId}-${active}`);
    else textarea.removeAttribute("aria-activedescendant");
  }
  function accept(i) {
    const q = tagQuery() ?? "";
    const pos = textarea.selectionStart;
    textarea.setRangeText(`${matches[i]} `, pos - q.length, pos, "end");
    matches = [];
    renderSuggestions();
    saveDraft();
  }

  textarea.addEventListener("input", () => { saveDraft(); showSuggestions(); });
  textarea.addEventListener("blur", () => setTimeout(() => { matches = []; renderSuggestions(); }, 100));
  textarea.addEventListener("keydown", (e) => {
    if (matches.length) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        active = (active + (e.key === "ArrowDown" ? 1 : -1) + matches.length) % matches.length;
        renderSuggestions();
        return;
      }
      if ((e.key === "Enter" || e.key === "Tab") && !e.ctrlKey && !e.metaKey) { e.preventDefault(); accept(active); return; }
      if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); matches = []; renderSuggestions(); return; }
    }
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); save(); }
    else if (e.key === "Escape" && editing) { e.preventDefault(); e.stopPropagation(); cancelEdit(); }
  });
  textarea.addEventListener("paste", (e) => {
    const files = [...(e.clipboardData?.files || [])];
    if (files.length) { e.preventDefault(); upload(files); }
  });
  form.addEventListener("dragover", (e) => { if (e.dataTransfer?.types.includes("Files")) { e.preventDefault(); form.classList.add("dropping"); } });
  form.addEventListener("dragleave", () => form.classList.remove("dropping"));
  form.addEventListener("drop", (e) => {
    form.classList.remove("dropping");
    if (e.dataTransfer?.files.length) { e.preventDefault(); upload([...e.dataTransfer.files]); }
  });

  if (autofocus) queueMicrotask(() => { textarea.focus(); textarea.setSelectionRange(textarea.value.length, textarea.value.length); });
  form.focusEditor = () => textarea.focus();
  form.refresh = () => { fillChoices(); pathInput.setSpace(spaceSelect.value); syncSpace(); attachButton.hidden = !features.attachments; };
  form.textarea = textarea;
  form.upload = upload;
  return form;
}
