// Memos written offline, and what another app shared into Daybook (decision
// 0034). Loaded with import() only when there is something to do.
//
// The outbox is a list in localStorage per user: {id, body}. Each memo keeps
// the client id it was first tried with (`?memoId=`), so sending it again is
// idempotent: a 409 for an id of ours that we can read means an earlier try
// got through, and the entry is done, never a second memo.
import { ApiError, api } from "./api.js";
import { toast } from "./dom.js";
import { addStrings, t } from "./i18n.js";

addStrings({
  savedOffline: "Offline: the memo is kept here and sent when you are back online.",
  outboxRefused: "A memo written offline was refused ({message}); its text is back in the editor.",
});

const key = (user) => `daybook.outbox.${user}`;
const read = (user) => { try { return JSON.parse(localStorage.getItem(key(user)) || "[]"); } catch { return []; } };
const write = (user, items) => (items.length ? localStorage.setItem(key(user), JSON.stringify(items)) : localStorage.removeItem(key(user)));

export function enqueue(user, id, body) {
  write(user, [...read(user).filter((i) => i.id !== id), { id, body }]);
  toast(t("savedOffline"));
}

let flushing = null;

// Send what is queued, oldest first; stops at the first network failure.
export function flush(user) {
  flushing ||= (async () => {
    let sent = 0;
    for (const item of read(user)) {
      try {
        await api("/memos", { method: "POST", body: item.body, query: { memoId: item.id }, quiet: true });
      } catch (err) {
        if (!(err instanceof ApiError)) break; // still offline
        const there = err.status === 409
          && await api(`/memos/${item.id}`, { quiet: true }).then(() => true, () => false);
        if (!there) { // refused for good (e.g. too long): give the text back, never lose it
          const draft = `daybook.draft.${user}`;
          localStorage.setItem(draft, [localStorage.getItem(draft), item.body.content].filter(Boolean).join("\n\n"));
          toast(t("outboxRefused", { message: err.message }), "error");
        }
      }
      write(user, read(user).filter((i) => i.id !== item.id));
      sent++;
    }
    return sent;
  })().finally(() => { flushing = null; });
  return flushing;
}

// A Web Share Target post, kept by the service worker: fill the composer.
export async function takeShared(composer) {
  const cache = await caches.open("daybook-share");
  const meta = await cache.match("/share-target/meta");
  if (!meta || !composer) return;
  const { title = "", text = "", url = "" } = await meta.json();
  const image = await cache.match("/share-target/image");
  await caches.delete("daybook-share");
  const area = composer.textarea;
  area.value = [title, text, url].filter(Boolean).join("\n") + (area.value ? `\n${area.value}` : "");
  composer.focusEditor();
  if (image) {
    const blob = await image.blob();
    const name = decodeURIComponent(image.headers.get("X-Filename") || "shared");
    await composer.upload([new File([blob], name, { type: blob.type })]);
  }
}
