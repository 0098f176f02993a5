// Memos written offline, the files chosen for them, and what another app
// shared into Daybook (decisions 0034, 0039). Loaded with import() only when
// there is something to do.
//
// The outbox is a list in localStorage per user: {id, body, files}. Each memo
// keeps the client id it was first tried with (`?memoId=`), so sending it
// again is idempotent: a 409 for an id of ours that we can read means an
// earlier try got through, and the entry is done, never a second memo.
//
// Files chosen offline live in IndexedDB (a photo would overflow
// localStorage's few megabytes), each under the attachment id it will be
// uploaded with (`?attachmentId=`), so its name `attachments/<id>` is known
// before the upload and the memo's body names it from the start. Sending an
// entry uploads its files first, then creates the memo with them bound, in
// this order on every try: the server answers a repeated upload of the same
// bytes under the same id with the first attachment (migration 0018), so a
// lost answer or a crash between upload and create never makes a second
// file, and a record is removed only once its memo exists.
import { ApiError, api } from "./api.js";
import { toast } from "./dom.js";
import { addStrings, t } from "./i18n.js";

addStrings({
  savedOffline: "Offline: the memo is kept here and sent when you are back online.",
  outboxRefused: "A memo written offline was refused ({message}); its text is back in the editor.",
  fileRefused: "{name} was refused ({message}); the memo is back in the editor without it.",
});

const key = (user) => `daybook.outbox.${user}`;
const read = (user) => { try { return JSON.parse(localStorage.getItem(key(user)) || "[]"); } catch { return []; } };
const write = (user, items) => (items.length ? localStorage.setItem(key(user), JSON.stringify(items)) : localStorage.removeItem(key(user)));

// IndexedDB: one store of {id, user, filename, type, blob, memo}. `blob` is
// null once uploaded; `memo` is the queued memo's client id, "" while the
// file is a draft's (shown in the composer, and again after a reload).
const fileId = (name) => name.replace(/^attachments\//, "");
function tx(mode, run) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open("daybook-files", 1);
    open.onupgradeneeded = () => open.result.createObjectStore("files", { keyPath: "id" });
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const done = db.transaction("files", mode);
      const request = run(done.objectStore("files"));
      done.oncomplete = () => { db.close(); resolve(request?.result); };
      done.onerror = done.onabort = () => { db.close(); reject(done.error); };
    };
  });
}
const getFile = (id) => tx("readonly", (s) => s.get(id));
const allFiles = () => tx("readonly", (s) => s.getAll());
const putFile = (record) => tx("readwrite", (s) => s.put(record));
// The composer loads this module at start only when the user has draft files.
const marker = (user) => `daybook.files.${user}`;
async function syncMarker(user) {
  const any = (await allFiles()).some((r) => r.user === user && !r.memo);
  if (any) localStorage.setItem(marker(user), "1"); else localStorage.removeItem(marker(user));
}

// A file chosen offline (or whose upload got no answer): kept for the draft.
export async function keepFile(user, file, id) {
  await putFile({ id, user, filename: file.name || "file", type: file.type, blob: file, memo: "" });
  localStorage.setItem(marker(user), "1");
  return { name: `attachments/${id}`, filename: file.name || "file" };
}

export async function dropFile(user, name) {
  await tx("readwrite", (s) => s.delete(fileId(name)));
  await syncMarker(user);
}

// The draft's kept files, for the composer's chips.
export async function draftFiles(user) {
  return (await allFiles()).filter((r) => r.user === user && !r.memo)
    .map((r) => ({ name: `attachments/${r.id}`, filename: r.filename }));
}

// Upload the kept files among `names` not uploaded yet. Throws a TypeError
// when there is no answer (still offline) and an ApiError, naming the file,
// when the server refuses one.
export async function sendFiles(names) {
  for (const name of names) {
    const record = await getFile(fileId(name));
    if (!record?.blob) continue; // uploaded already (or never kept here)
    const form = new FormData();
    form.append("file", record.blob, record.filename);
    try {
      await api("/attachments", { method: "POST", body: form, query: { attachmentId: record.id }, quiet: true });
    } catch (err) {
      if (err instanceof ApiError) Object.assign(err, { file: record.filename, attachment: name });
      throw err;
    }
    await putFile({ ...record, blob: null }); // the bytes are on the server now
  }
}

// Their memo exists: the records are done.
export async function forgetFiles(user, names) {
  if (!names?.length) return;
  await tx("readwrite", (s) => { names.forEach((n) => s.delete(fileId(n))); });
  await syncMarker(user);
}

// Back to the draft (the memo was refused), or into a queued memo.
async function assignFiles(user, names, memo) {
  for (const name of names || []) {
    const record = await getFile(fileId(name));
    if (record) await putFile({ ...record, memo });
  }
  await syncMarker(user);
}

// The entry is written at once (a crash before the files are marked leaves
// them shown in the draft too, never lost), then its files leave the draft.
export async function enqueue(user, id, body, files = []) {
  write(user, [...read(user).filter((i) => i.id !== id), { id, body, files }]);
  toast(t("savedOffline"));
  await assignFiles(user, files, id);
}

let flushing = null;

// Send what is queued, oldest first; stops at the first network failure.
export function flush(user) {
  flushing ||= (async () => {
    let sent = 0;
    for (const item of read(user)) {
      try {
        await sendFiles(item.files || []);
        await api("/memos", { method: "POST", body: item.body, query: { memoId: item.id }, quiet: true });
      } catch (err) {
        if (!(err instanceof ApiError)) break; // still offline
        const there = err.status === 409 && !err.file
          && await api(`/memos/${item.id}`, { quiet: true }).then(() => true, () => false);
        if (!there) { // refused for good (e.g. too long): give the memo back, never lose it
          const draft = `daybook.draft.${user}`;
          localStorage.setItem(draft, [localStorage.getItem(draft), item.body.content].filter(Boolean).join("\n\n"));
          const files = item.files || [];
          if (err.file) { // the refused file goes; the others return to the editor
            await dropFile(user, err.attachment);
            toast(t("fileRefused", { name: err.file, message: err.message }), "error");
          } else toast(t("outboxRefused", { message: err.message }), "error");
          await assignFiles(user, files.filter((n) => n !== err.attachment), "");
          write(user, read(user).filter((i) => i.id !== item.id));
          sent++;
          continue;
        }
      }
      await forgetFiles(user, item.files);
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
