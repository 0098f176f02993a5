// Daybook's service worker (decision 0034): the app opens offline with the
// last timeline it showed, and other apps can share into a new memo.
//
// - Network first, the cache as the fallback: the shell (navigations to
//   "/"; the client routes are in the hash), /assets/*, and the few API reads the first screen makes
//   (who am I, the profile, stats, memo lists). Online, nothing is served
//   stale; offline, the last answers are.
// - Writes are never intercepted: the client's outbox queues a memo written
//   offline (web/assets/outbox.js).
// - "signed-out" from the page drops the cache, so one person's memos are
//   not shown to the next offline.
// - POST /share-target (the manifest's share_target) is stored in a cache of
//   its own and answered with a redirect to the app, which fills the editor.
const CACHE = "daybook-v1";
const API = /^\/api\/v1\/(auth\/me$|instance\/profile$|users\/[^/]+:getStats$|memos(\/[^/:]+)?$)/;

// Loaded with import() only when needed, so fetched now: the outbox must load offline.
const LAZY = ["/assets/outbox.js", "/assets/memo-page.js", "/assets/settings.js", "/assets/extras.js", "/assets/extras.css", "/assets/i18n/en-extra.js"];

self.addEventListener("install", (e) => {
  self.skipWaiting();
  e.waitUntil(caches.open(CACHE).then((c) => c.addAll(LAZY)).catch(() => {}));
});
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
self.addEventListener("message", (e) => { if (e.data === "signed-out") e.waitUntil(caches.delete(CACHE)); });

self.addEventListener("fetch", (e) => {
  const req = e.request;
  const url = new URL(req.url);
  if (url.origin !== location.origin) return;
  if (req.method === "POST" && url.pathname === "/share-target") { e.respondWith(shared(req)); return; }
  if (req.method !== "GET") return;
  // Only the app's own page: a navigation to an export download or the reset
  // page must never be stored as the shell.
  if (req.mode === "navigate" && url.pathname === "/") e.respondWith(networkFirst(req, "/"));
  else if (url.pathname.startsWith("/assets/") || API.test(url.pathname)) e.respondWith(networkFirst(req, req));
});

async function networkFirst(req, key) {
  const cache = await caches.open(CACHE);
  try {
    const res = await fetch(req);
    if (res.ok) await cache.put(key, res.clone());
    return res;
  } catch (err) {
    const hit = await cache.match(key);
    if (hit) return hit;
    throw err;
  }
}

async function shared(req) {
  const form = await req.formData();
  const cache = await caches.open("daybook-share");
  const field = (name) => String(form.get(name) || "");
  await cache.put("/share-target/meta", new Response(JSON.stringify({
    title: field("title"), text: field("text"), url: field("url") })));
  const image = form.get("image");
  if (image && typeof image !== "string" && image.size) {
    await cache.put("/share-target/image", new Response(image, {
      headers: { "Content-Type": image.type || "application/octet-stream", "X-Filename": encodeURIComponent(image.name || "shared") } }));
  }
  return Response.redirect("/#/", 303);
}
