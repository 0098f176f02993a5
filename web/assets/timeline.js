// The timeline: pages of memos by page token (infinite scroll through an
// IntersectionObserver, with a button as the keyboard/no-observer path),
// pinned first; with a query, search results instead (extras.js).
import { api } from "./api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { memoCard } from "./memo-card.js";
import { filterFor } from "./store.js";

const PAGE = 20;

export function createTimeline(route, { onCountsChanged } = {}) {
  const feed = h("div", { class: "feed", role: "feed", "aria-busy": "true", "aria-label": t("timeline") });
  const status = h("p", { class: "muted feed-status", "aria-live": "polite" });
  const more = h("button", { class: "btn load-more", type: "button", hidden: true, onclick: () => load() }, t("loadMore"));
  const sentinel = h("div", { class: "sentinel", "aria-hidden": "true" });
  const root = h("section", { class: "timeline" }, feed, status, more, sentinel);
  let token = "";
  let done = false;
  let loading = false;
  const filter = filterFor(route);
  const query = route.params.q || "";
  const archived = route.name === "archived";
  if (query) { // results, not a timeline: what matched and how many (decision 0034)
    import("./extras.js").then((m) => m.renderSearch(root, route));
    root.addMemo = () => {};
    root.dispose = () => {};
    return root;
  }
  let spaceFallback = null; // null: not tried; true: filter by space client-side

  async function fetchPage() {
    const list = (f, quiet) => api("/memos", { quiet, query: {
      pageSize: PAGE, pageToken: token, filter: f, view: "html",
      state: archived ? "ARCHIVED" : "", orderBy: "pinned desc, create_time desc" } });
    if (route.name === "space" && spaceFallback !== true) {
      try {
        const res = await list(filter, true);
        spaceFallback = false;
        return { memos: res.memos || [], next: res.nextPageToken || "" };
      } catch (err) {
        if (spaceFallback === false || err.status !== 400) throw err;
        spaceFallback = true; // a server whose filter cannot name a space yet
      }
    }
    if (spaceFallback) {
      const res = await list([filterFor(route, { scope: false }), "space != null"].filter(Boolean).join(" && "));
      const want = `spaces/${route.arg}`;
      return { memos: (res.memos || []).filter((m) => m.space === want), next: res.nextPageToken || "" };
    }
    const res = await list(filter, false);
    return { memos: res.memos || [], next: res.nextPageToken || "" };
  }

  async function load() {
    if (loading || done) return;
    loading = true;
    feed.setAttribute("aria-busy", "true");
    status.textContent = t("loading");
    try {
      const { memos, next } = await fetchPage();
      for (const memo of memos) feed.append(card(memo));
      token = next;
      done = !next;
    } catch {
      done = true;
    } finally {
      loading = false;
      feed.setAttribute("aria-busy", "false");
      more.hidden = done;
      const empty = !feed.children.length;
      const filtered = Boolean(filterFor(route, { scope: false }) || query);
      status.textContent = empty ? t(filtered ? "emptyFiltered" : "empty") : done ? t("endOfList") : "";
      feed.querySelectorAll(".memo-card").forEach((el, i, all) => {
        el.setAttribute("aria-posinset", String(i + 1));
        el.setAttribute("aria-setsize", done ? String(all.length) : "-1");
      });
    }
  }

  const drawn = new WeakMap(); // card element -> the memo it shows

  function card(memo) {
    const el = memoCard(memo, {
      onChanged: (updated) => {
        // Pin and unpin move the card at once (defect 8), not after a reload.
        if (updated.pinned !== memo.pinned) { el.remove(); root.addMemo(updated); } else el.replaceWith(card(updated));
        onCountsChanged?.();
      },
      onRestored: (back) => { if (back.state === (archived ? "ARCHIVED" : "NORMAL")) root.addMemo(back); },
      onRemoved: () => {
        const next = el.nextElementSibling || el.previousElementSibling;
        el.remove();
        if (next instanceof HTMLElement) next.focus();
        onCountsChanged?.();
      },
    });
    drawn.set(el, memo);
    return el;
  }

  const observer = "IntersectionObserver" in window
    ? new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) load(); }, { rootMargin: "400px" })
    : null;
  observer?.observe(sentinel);

  root.addMemo = (memo) => {
    const firstUnpinned = [...feed.children].find((el) => !el.classList.contains("pinned"));
    feed.insertBefore(card(memo), memo.pinned ? feed.firstChild : firstUnpinned || null);
    status.textContent = "";
  };
  // Space memos drawn before the caller's access arrived are drawn again with
  // the controls their grants allow: those cards only, in place, so nothing is
  // fetched twice and a menu open on any other card stays open (a whole new
  // timeline here closed it under the reader's pointer).
  root.redrawPlaced = () => {
    feed.querySelectorAll(".memo-card[data-space]").forEach((el) => {
      const memo = drawn.get(el);
      if (memo && !el.querySelector("details[open]")) el.replaceWith(card(memo));
    });
  };
  root.load = load;
  root.dispose = () => observer?.disconnect();
  load();
  return root;
}
