// A small Markdown renderer for the editor's live preview and for memos that
// arrive without server HTML (search results, comments). It builds DOM nodes
// (text is never parsed as HTML) and shares the server's link rules: only
// http(s), mailto and relative links; remote images wait for a click.
import { h } from "./dom.js";
import { t } from "./i18n.js";

const TAG = /(^|[^\w#/&])#([^\W][\w\-/]*)/gu;

// Browsers read "\" as "/" and drop tabs and newlines in http(s) URLs, so
// "/\host/x.png" and "/\t/host" are protocol-relative, i.e. on another host.
// A relative URL is kept only when resolving it (WHATWG rules, as the browser
// will) stays on this origin; anything else is returned absolute, so callers
// treat it as remote (an image then waits for a click).
const SELF = "https://daybook.invalid";

export function safeUrl(url) {
  const trimmed = url.trim();
  const squeezed = trimmed.replace(/[\x00-\x20\x7f]/g, "").replace(/\\/g, "/");
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(squeezed);
  if (scheme) return ["http", "https", "mailto"].includes(scheme[1].toLowerCase()) ? trimmed : null;
  let resolved;
  try { resolved = new URL(trimmed, SELF + "/"); } catch { return null; }
  if (resolved.origin !== SELF) {
    return resolved.protocol === "https:" || resolved.protocol === "http:" ? resolved.href : null;
  }
  return squeezed.startsWith("//") ? null : trimmed;
}

const INLINE = /(`[^`]+`)|(!?\[[^\]]*\]\([^)\s]*\))|(\*\*[^*]+\*\*)|(~~[^~]+~~)|(\*[^*\s][^*]*\*|_[^_\s][^_]*_)|(https?:\/\/[^\s<)]+)/;

function inline(text) {
  const out = [];
  while (text) {
    const m = INLINE.exec(text);
    if (!m) { out.push(...tags(text)); break; }
    if (m.index) out.push(...tags(text.slice(0, m.index)));
    const tok = m[0];
    if (m[1]) out.push(h("code", {}, tok.slice(1, -1)));
    else if (m[2]) out.push(link(tok));
    else if (m[3]) out.push(h("strong", {}, inline(tok.slice(2, -2))));
    else if (m[4]) out.push(h("s", {}, inline(tok.slice(2, -2))));
    else if (m[5]) out.push(h("em", {}, inline(tok.slice(1, -1))));
    else out.push(anchor(tok, tok));
    text = text.slice(m.index + tok.length);
  }
  return out;
}

function tags(text) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(TAG)) {
    const start = m.index + m[1].length;
    out.push(text.slice(last, start));
    const tag = m[2].replace(/\/+$/, "");
    out.push(h("span", { class: "tag", dataset: { tag } }, `#${tag}`));
    last = start + 1 + tag.length;
  }
  out.push(text.slice(last));
  return out;
}

function anchor(href, label) {
  const safe = safeUrl(href);
  if (!safe) return h("span", { class: "unsafe-link" }, label);
  const remote = /^https?:/i.test(safe);
  return h("a", { href: safe, rel: "noopener noreferrer nofollow", target: remote ? "_blank" : null }, label);
}

function link(tok) {
  const m = /^(!?)\[([^\]]*)\]\(([^)\s]*)\)$/.exec(tok);
  const [, bang, label, href] = m;
  if (!bang) return anchor(href, inline(label));
  const safe = safeUrl(href);
  if (!safe) return h("span", { class: "unsafe-link" }, label);
  if (/^https?:/i.test(safe)) {
    return h("button", { type: "button", class: "remote-image", dataset: { src: safe, alt: label } }, label || safe);
  }
  return h("img", { src: safe, alt: label, loading: "lazy" });
}

const LIST = /^(\s*)([-*+]|\d+[.)])\s+(.*)$/;
const TASK = /^\[([ xX])\]\s+(.*)$/;

export function renderMarkdown(source) {
  const root = document.createDocumentFragment();
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  let para = [];
  let list = null;
  let taskIndex = 0;
  const flush = () => {
    if (para.length) root.append(h("p", {}, inline(para.join(" "))));
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^\s*(```|~~~)/.test(line)) {
      flush(); list = null;
      const fence = line.trim().slice(0, 3);
      const body = [];
      while (++i < lines.length && !lines[i].trim().startsWith(fence)) body.push(lines[i]);
      root.append(h("pre", {}, h("code", {}, body.join("\n"))));
      continue;
    }
    if (!line.trim()) { flush(); list = null; continue; }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) { flush(); list = null; root.append(h(`h${heading[1].length}`, {}, inline(heading[2]))); continue; }
    if (line.startsWith(">")) { flush(); list = null; root.append(h("blockquote", {}, h("p", {}, inline(line.replace(/^>\s?/, ""))))); continue; }
    const item = LIST.exec(line);
    if (item) {
      flush();
      const ordered = /\d/.test(item[2]);
      if (!list || list.ordered !== ordered) {
        list = { ordered, el: h(ordered ? "ol" : "ul") };
        root.append(list.el);
      }
      const task = TASK.exec(item[3]);
      if (task) {
        list.el.classList.add("contains-task-list");
        const index = taskIndex++;
        list.el.append(h("li", { class: "task-list-item" },
          h("input", { type: "checkbox", class: "task-list-item-checkbox", checked: task[1] !== " ",
            dataset: { task: String(index) }, "aria-label": t("taskLabel", { n: index + 1 }) }),
          " ", inline(task[2])));
      } else list.el.append(h("li", {}, inline(item[3])));
      continue;
    }
    if (list) { list.el.lastElementChild?.append(" ", ...inline(line.trim())); continue; }
    para.push(line.trim());
  }
  flush();
  if (!root.childNodes.length) root.append(h("p", { class: "muted" }, t("emptyPreview")));
  return root;
}

// Flip the index-th task checkbox in the Markdown source (fenced code skipped),
// matching the order in which the renderers number data-task.
export function toggleTask(source, index) {
  const lines = source.split("\n");
  let fence = null;
  let seen = 0;
  for (let i = 0; i < lines.length; i++) {
    const trimmed = lines[i].trim();
    if (fence) { if (trimmed.startsWith(fence)) fence = null; continue; }
    if (/^(```|~~~)/.test(trimmed)) { fence = trimmed.slice(0, 3); continue; }
    const m = /^(\s*(?:[-*+]|\d+[.)])\s+\[)([ xX])(\])/.exec(lines[i]);
    if (!m) continue;
    if (seen++ === index) {
      lines[i] = m[1] + (m[2] === " " ? "x" : " ") + m[3] + lines[i].slice(m[0].length);
      return lines.join("\n");
    }
  }
  return null;
}
