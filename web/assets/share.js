// Share links: made on purpose (a confirmation for a Private memo, an
// expiry chosen), listed and revocable on the memo's page, and the shared
// page itself, readable and branded, for a visitor without an account.
import { api, degrade, features, memoId } from "./api.js";
import { clear, copyText, dialog, field, h, relativeTime, toast } from "./dom.js";
import { t } from "./i18n.js";

const EXPIRY_DAYS = [1, 7, 30, 0]; // 0: never
const linkFor = (token) => `${location.origin}/#/share/${encodeURIComponent(token)}`;

// Ask, then create: resolves to the new share, or null when cancelled.
export function shareDialog(memo) {
  return new Promise((resolve) => {
    let made = null;
    const expiry = h("select", { class: "select" }, EXPIRY_DAYS.map((d) =>
      h("option", { value: String(d) }, d ? t("days", { n: d }) : t("never"))));
    expiry.value = "7";
    const [expRow] = field(t("linkExpires"), expiry);
    const warn = memo.visibility === "PRIVATE"
      ? h("p", { class: "warning", role: "note" }, t("sharePrivateWarning")) : null;
    const form = h("form", { class: "stack", onsubmit: async (e) => {
      e.preventDefault();
      const days = Number(expiry.value);
      const body = days ? { expireTime: new Date(Date.now() + days * 86400e3).toISOString().replace(/\.\d{3}Z$/, "Z") } : {};
      try {
        made = await api(`/memos/${memoId(memo.name)}/shares`, { method: "POST", body, quiet: true });
        await copyText(linkFor(made.token || made.name.split("/").pop()), t("linkCopied"));
        el.close("ok");
      } catch (err) {
        if (degrade("shares", err)) toast(t("shareUnavailable"), "error");
        else toast(err.message, "error");
      }
    } }, h("p", {}, t("shareExplain")), warn, expRow);
    const el = dialog({ title: t("shareTitle"), body: form, onClose: () => resolve(made), actions: [
      h("button", { class: "btn", type: "button", onclick: () => el.close("cancel") }, t("cancel")),
      h("button", { class: "btn primary", type: "button", onclick: () => form.requestSubmit() },
        memo.visibility === "PRIVATE" ? t("shareAnyway") : t("createLink")),
    ] });
    expiry.focus();
  });
}

export function shareLinksSection(memo) {
  const list = h("ul", { class: "share-list" });
  const el = h("section", { class: "panel page-section", "aria-label": t("shareLinks") },
    h("h2", {}, t("shareLinks")), list,
    h("button", { type: "button", class: "btn small", onclick: async () => { if (await shareDialog(memo)) load(); } }, t("newShareLink")));
  async function load() {
    let shares;
    try { shares = (await api(`/memos/${memoId(memo.name)}/shares`, { quiet: true })).memoShares || []; } catch (err) {
      if (degrade("shares", err)) el.remove();
      return;
    }
    clear(list, shares.length ? shares.map((s) => {
      const token = s.token || s.name.split("/").pop();
      const expired = s.expireTime && new Date(s.expireTime) < new Date();
      return h("li", { class: "share-row" },
        h("div", { class: "share-what" }, h("code", { class: "share-url" }, linkFor(token)),
          h("div", { class: "muted small" }, t("tokenCreatedAt", { time: relativeTime(s.createTime) }), " · ",
            s.expireTime ? t(expired ? "expiredAt" : "expiresAt", { time: new Date(s.expireTime).toLocaleString() }) : t("noExpiry"))),
        h("div", { class: "row-actions" },
          h("button", { type: "button", class: "btn ghost small", onclick: () => copyText(linkFor(token), t("linkCopied")) }, t("copy")),
          h("button", { type: "button", class: "btn ghost small danger", "aria-label": t("revokeLink"), onclick: async () => {
            try { await api(`/${s.name}`, { method: "DELETE" }); toast(t("linkRevoked")); await load(); } catch { /* toasted */ }
          } }, t("revoke"))));
    }) : [h("li", { class: "muted small" }, t("noShareLinks"))]);
  }
  if (features.shares) load(); else el.hidden = true;
  return el;
}

// The page a share link opens: the memo alone, with the instance's name,
// who wrote it and when, and a way in for people who have an account.
export async function renderShared(app, token, renderContent) {
  let memo;
  try { memo = await api(`/shares/${encodeURIComponent(token)}/memo`, { query: { view: "html" }, quiet: true }); } catch { memo = null; }
  const brand = h("a", { class: "brand", href: "/" }, h("span", { class: "logo", "aria-hidden": "true" }, "◐"), t("appName"));
  document.title = memo ? `${memo.property?.title || t("sharedMemo")} · ${t("appName")}` : t("shareNotFound");
  clear(app, h("div", { class: "shared-shell" },
    h("header", { class: "shared-top" }, brand, h("a", { class: "btn small", href: "/" }, t("signIn"))),
    h("main", { class: "shared", id: "main" },
      memo ? h("article", { class: "memo-card shared-memo" },
        h("div", { class: "memo-meta" }, h("span", { class: "creator" }, memo.creator.replace(/^users\//, "")),
          h("time", { datetime: memo.displayTime || memo.createTime }, new Date(memo.displayTime || memo.createTime).toLocaleString())),
        renderContent(memo))
        : h("div", { class: "panel" }, h("h1", { class: "page-title" }, t("shareNotFound")), h("p", { class: "muted" }, t("shareNotFoundHelp")))),
    h("footer", { class: "shared-foot muted small" }, t("sharedFooter"))));
}
