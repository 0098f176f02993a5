// One memo in the timeline: its rendered content, badges, actions (edit, pin,
// archive, delete, share link), task ticking, reactions and the comments thread.
import { api, degrade, features, memoId, ApiError } from "./api.js";
import { clear, confirmDialog, h, relativeTime, toast } from "./dom.js";
import { t } from "./i18n.js";
import { renderMarkdown, toggleTask } from "./markdown.js";
import { createComposer } from "./composer.js";
import { setParams, state } from "./store.js";
import { icon } from "./icons.js";
import { canEdit } from "./tree.js";
import { shareDialog } from "./share.js";

const EMOJI = ["👍", "❤️", "🎉", "😄", "👀", "🙏"];

export async function fetchRendered(name) {
  return api(`/memos/${memoId(name)}`, { query: { view: "html" } });
}

export function contentNode(memo) {
  const el = h("div", { class: "memo-content" });
  if (typeof memo.contentHtml === "string") el.innerHTML = memo.contentHtml; // server-sanitised
  else el.append(renderMarkdown(memo.content));
  return el;
}

export function memoCard(memo, { onChanged, onRemoved, onRestored, readonly = false, openComments = false, page = false }) {
  // Who may change it: the creator of a personal memo; in a space, the write
  // rule (creator with write at its path, or owner there). The server decides.
  const mine = !readonly && state.me && memo.creator === state.me.name;
  const own = !readonly && canEdit(memo);
  const id = memoId(memo.name);
  const card = h("article", { class: `memo-card${memo.pinned ? " pinned" : ""}`, tabindex: "0",
    "aria-labelledby": `${id}-meta`, dataset: memo.space ? { name: memo.name, space: memo.space } : { name: memo.name } });

  const refresh = async () => onChanged?.(await fetchRendered(memo.name));

  async function patch(body, mask, toastText) {
    try {
      const saved = await api(`/memos/${id}`, { method: "PATCH", body, query: { updateMask: mask },
        headers: { "If-Match": memo.etag }, quiet: true });
      if (toastText) toast(toastText);
      return saved;
    } catch (err) {
      if (err instanceof ApiError && err.status === 412) { toast(t("staleMemo"), "error"); await refresh(); }
      else toast(err.message || t("error"), "error");
      return null;
    }
  }

  // Header: who, when, where.
  const meta = h("div", { class: "memo-meta", id: `${id}-meta` },
    memo.creator !== state.me?.name ? h("span", { class: "creator" }, memo.creator.replace(/^users\//, "")) : null,
    readonly ? h("time", { datetime: memo.displayTime || memo.createTime, title: new Date(memo.createTime).toLocaleString() },
      relativeTime(memo.displayTime || memo.createTime))
      : h("a", { class: "memo-time", href: `#/m/${id}`, title: t("openMemo", { time: new Date(memo.createTime).toLocaleString() }) },
        h("time", { datetime: memo.displayTime || memo.createTime }, relativeTime(memo.displayTime || memo.createTime))),
    memo.updateTime && memo.createTime && Date.parse(memo.updateTime) - Date.parse(memo.createTime) > 60e3
      ? h("span", { class: "muted small edited", title: new Date(memo.updateTime).toLocaleString() }, t("edited")) : null,
    memo.pinned ? h("span", { class: "badge pin" }, t("pinned")) : null,
    h("span", { class: `badge vis vis-${memo.visibility.toLowerCase()}` }, t(`vis_${memo.visibility}`)),
    memo.space ? h("a", { class: "badge space-badge", href: `#/space/${encodeURIComponent(memo.space.replace(/^spaces\//, ""))}` }, `${state.spaces.find((s) => s.name === memo.space)?.title || memo.space.replace(/^spaces\//, "")}${memo.tree ? " · " + memo.tree : ""}`) : null,
    memo.state === "ARCHIVED" ? h("span", { class: "badge" }, t("archived")) : null);

  const menu = own ? actionsMenu() : null;
  const header = h("header", { class: "memo-header" }, meta, menu);
  let body = contentNode(memo);
  body.querySelectorAll("input[data-task]").forEach((box) => {
    box.setAttribute("aria-label", t("taskLabel", { n: Number(box.dataset.task) + 1 }));
    if (!own) box.disabled = true;
  });

  // Clicks inside the rendered content: tasks, tags, remote images.
  card.addEventListener("click", async (e) => {
    const target = e.target;
    if (!(target instanceof HTMLElement) || !body.contains(target)) return;
    if (target.matches("input[data-task]")) {
      const next = own ? toggleTask(memo.content, Number(target.dataset.task)) : null;
      if (next === null) { e.preventDefault(); return; }
      // The box ticks at once (defect 8) and is put back if the server refuses.
      const saved = await patch({ content: next }, "content");
      if (saved) await refresh();
      else target.checked = !target.checked;
    } else if (target.matches(".tag[data-tag]")) {
      setParams({ tag: target.dataset.tag, q: null });
    } else if (target.matches("button.remote-image")) {
      const img = h("img", { src: target.dataset.src, alt: target.dataset.alt || "", loading: "lazy",
        referrerpolicy: "no-referrer" });
      target.replaceWith(img);
    }
  });
  body.querySelectorAll("button.remote-image").forEach((b) => {
    b.setAttribute("aria-label", t("loadImage", { label: b.textContent }));
    b.prepend(icon("image"));
  });

  // An image the content already shows (older memos) is not repeated below it (defect 6).
  const listed = (memo.attachments || []).filter((a) => !(memo.content || "").includes(`/file/${a.name}/`));
  const attachments = listed.length
    ? h("ul", { class: "attachments", "aria-label": t("attachments") }, listed.map((a) => {
      const url = `/file/${a.name}/${encodeURIComponent(a.filename)}`;
      return h("li", {}, a.type?.startsWith("image/")
        ? h("a", { href: url, target: "_blank", rel: "noopener" }, h("img", { src: url, alt: a.filename, loading: "lazy" }))
        : h("a", { href: url, target: "_blank", rel: "noopener", class: "file-link" }, icon("clip"), a.filename));
    }))
    : null;

  // Footer: reactions and the comments toggle.
  const reactions = h("div", { class: "reactions" });
  const commentsBox = h("section", { class: "comments", hidden: true, "aria-label": t("comments") });
  const commentButton = h("button", { class: "btn ghost small", type: "button", "aria-expanded": "false",
    onclick: () => toggleComments() });
  // The count is there before opening (issue 19, defect 10): the memo's incoming
  // COMMENT relations, which the server lists only for comments the caller may read.
  const countLabel = (n) => n ? t(n === 1 ? "commentCountOne" : "commentCount", { count: n }) : t("comments");
  const showCount = (n) => commentButton.replaceChildren(icon("comment"), countLabel(n));
  showCount((memo.relations || []).filter((r) => r.type === "COMMENT" && r.relatedMemo?.name === memo.name).length);
  const footer = h("footer", { class: "memo-footer" }, reactions,
    !readonly && features.comments ? commentButton : null);
  renderReactions();

  // Long memos are collapsed in lists (never on their own page), with "Show
  // more"; once drawn, one that fits after all loses the button again.
  const long = !page && ((memo.content || "").length > 700 || (memo.content || "").split("\n").length > 14);
  const more = long ? h("button", { type: "button", class: "link show-more", "aria-expanded": "false",
    onclick: () => setCollapsed(!body.classList.contains("collapsed")) }, t("showMore")) : null;
  function setCollapsed(on) {
    body.classList.toggle("collapsed", on);
    more.setAttribute("aria-expanded", String(!on));
    more.textContent = on ? t("showMore") : t("showLess");
  }
  if (more) {
    setCollapsed(true);
    requestAnimationFrame(() => { if (body.isConnected && body.scrollHeight <= body.clientHeight + 2) { body.classList.remove("collapsed"); more.remove(); } });
  }

  clear(card, header, body, more, attachments, footer, commentsBox);
  if (openComments && features.comments && !readonly) queueMicrotask(() => toggleComments());

  function renderReactions() {
    const groups = new Map();
    for (const r of memo.reactions || []) {
      const g = groups.get(r.reactionType) || { count: 0, mine: null };
      g.count++;
      if (r.creator === state.me?.name) g.mine = r;
      groups.set(r.reactionType, g);
    }
    const chips = [...groups].map(([emoji, g]) => h("button", { type: "button",
      class: `reaction${g.mine ? " mine" : ""}`, "aria-pressed": String(Boolean(g.mine)),
      "aria-label": t("reactWith", { emoji }), disabled: readonly,
      onclick: () => react(emoji, g.mine) }, t("reactionCount", { emoji, count: g.count })));
    const picker = readonly || !features.reactions ? null : h("details", { class: "menu reaction-picker" },
      h("summary", { class: "btn ghost small", "aria-label": t("react"), title: t("react") }, icon("smile")),
      h("div", { class: "menu-list row" }, EMOJI.map((emoji) => h("button", { type: "button", class: "btn ghost",
        "aria-label": t("reactWith", { emoji }), onclick: (e) => { e.target.closest("details").open = false; react(emoji, groups.get(emoji)?.mine); } }, emoji))));
    clear(reactions, chips, picker);
  }

  async function react(emoji, mine) {
    try {
      if (mine) await api(`/${mine.name}`, { method: "DELETE", quiet: true });
      else await api(`/memos/${id}/reactions`, { method: "POST", quiet: true,
        body: { reaction: { contentId: memo.name, reactionType: emoji } } });
      await refresh();
    } catch (err) {
      if (degrade("reactions", err)) { renderReactions(); toast(t("error"), "error"); }
      else toast(err.message, "error");
    }
  }

  async function toggleComments() {
    const open = commentsBox.hidden;
    commentsBox.hidden = !open;
    commentButton.setAttribute("aria-expanded", String(open));
    if (open) await loadComments();
  }

  async function loadComments() {
    let list;
    try {
      list = (await api(`/memos/${id}/comments`, { quiet: true })).memos || [];
    } catch (err) {
      if (degrade("comments", err)) { commentButton.remove(); commentsBox.remove(); }
      else toast(err.message, "error");
      return;
    }
    const input = h("textarea", { class: "input", rows: "2", "aria-label": t("addComment"), placeholder: t("addComment") });
    const send = async () => {
      if (!input.value.trim()) return;
      try {
        await api(`/memos/${id}/comments`, { method: "POST", body: { content: input.value, visibility: memo.visibility === "SPACE" ? "SPACE" : memo.visibility } });
        await loadComments();
      } catch { /* toasted */ }
    };
    input.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); send(); } });
    commentsBox.replaceChildren(
      list.length ? h("ol", { class: "comment-list" }, list.map((c) => h("li", { class: "comment" },
        h("div", { class: "memo-meta" }, h("span", { class: "creator" }, c.creator.replace(/^users\//, "")),
          h("time", { datetime: c.createTime }, relativeTime(c.createTime))),
        contentNode(c)))) : h("p", { class: "muted" }, t("noComments")),
      h("form", { class: "comment-form", onsubmit: (e) => { e.preventDefault(); send(); } }, input,
        h("button", { class: "btn primary small", type: "submit" }, t("send"))));
    showCount(list.length);
  }

  function actionsMenu() {
    const item = (label, handler, cls = "") => h("button", { type: "button", role: "menuitem", class: `menu-item ${cls}`,
      onclick: (e) => { e.target.closest("details").open = false; handler(); } }, label);
    const archived = memo.state === "ARCHIVED";
    return h("details", { class: "menu" },
      h("summary", { class: "btn ghost small icon", "aria-label": t("actions"), title: t("actions") }, icon("more")),
      h("div", { class: "menu-list", role: "menu" },
        archived ? null : item(t("edit"), startEdit),
        archived ? null : item(memo.pinned ? t("unpin") : t("pin"), async () => {
          if (await patch({ pinned: !memo.pinned }, "pinned")) await refresh();
        }),
        // Share links only for unplaced memos, as the server allows (decision 0030).
        archived || !mine || memo.visibility === "SPACE" || memo.space ? null : item(t("copyLink"), share),
        page ? null : item(t("openPage"), () => { location.hash = `#/m/${id}`; }),
        item(archived ? t("restore") : t("archive"), async () => {
          const saved = await patch({ state: archived ? "NORMAL" : "ARCHIVED" }, "state");
          if (!saved) return;
          onRemoved?.(memo);
          // Undo puts it back as it was (issue 19: undo for archive).
          toast(archived ? t("restoredToast") : t("archivedToast"), "info", { label: t("undo"), run: async () => {
            try {
              const back = await api(`/memos/${id}`, { method: "PATCH", query: { updateMask: "state" },
                body: { state: archived ? "ARCHIVED" : "NORMAL" }, headers: { "If-Match": saved.etag } });
              toast(t("undone"));
              onRestored?.(await fetchRendered(back.name));
            } catch { /* toasted */ }
          } });
        }),
        item(t("delete"), async () => {
          if (!(await confirmDialog(t("confirmDelete"), { confirmLabel: t("delete"), danger: true }))) return;
          try {
            await api(`/memos/${id}`, { method: "DELETE" });
            onRemoved?.(memo);
            // It went to the trash: Undo brings it back (POST :undelete).
            toast(t("trashedToast"), "info", { label: t("undo"), run: async () => {
              try {
                const back = await api(`/memos/${id}:undelete`, { method: "POST", body: {} });
                toast(t("undone"));
                onRestored?.(await fetchRendered(back.name));
              } catch { /* toasted */ }
            } });
          } catch { /* toasted */ }
        }, "danger")));
  }

  async function share() {
    if (!features.shares) { toast(t("shareUnavailable"), "error"); return; }
    await shareDialog(memo);
  }

  function startEdit() {
    const editor = createComposer({ memo, autofocus: true,
      onSaved: async (saved) => { toast(t("savedToast")); onChanged?.(await fetchRendered(saved.name)); },
      onCancel: () => { editor.replaceWith(body); if (more) more.hidden = false; card.focus(); } });
    body.replaceWith(editor);
    if (more) more.hidden = true;
  }

  return card;
}
