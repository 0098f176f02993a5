"""A memo's Markdown rendered to safe HTML for the web client.

Safety does not rest on a sanitiser run afterwards but on what the renderer
can emit at all: raw HTML is disabled (``html=False``, so ``<script>`` is text),
every link passes an allow-list of schemes (http, https, mailto, or a relative
reference; ``javascript:``, ``data:``, ``vbscript:`` and the rest lose their
link), and images never load a remote URL on their own: a remote image becomes
a ``<button class="remote-image" data-src=...>`` that the client swaps for an
``<img>`` only after a click. Task checkboxes carry ``data-task`` (their index
in document order) so a click can toggle the matching ``- [ ]`` in the source;
the client labels them (its strings live in one catalogue, not here).

Rendering is opt-in for readers (``?view=html`` on list and get). It happens
once per content, in the same parse that derives the stored properties, off
the event loop (app.memos.parse), and is cached beside the memo
(app.memos.html_cache).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from mdit_py_plugins.tasklists import tasklists_plugin

from app.memos.markdown import TAG_RE, tag_levels

SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_REL = "noopener noreferrer nofollow"
# The same source line pattern the client toggles: "- [ ]", "* [x]", "1. [ ]".
TASK_LINE_RE = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+\[)([ xX])(\])", re.MULTILINE)


def safe_url(url: str) -> str | None:
    """``url`` when it is http(s), mailto or relative; ``None`` otherwise."""
    text = url.strip()
    # Browsers ignore tabs/newlines and control characters inside a scheme
    # ("java\tscript:"), so judge the URL the way a browser would read it.
    # Browsers also read a backslash as "/" in http(s) URLs: "/<backslash>host/x.png"
    # is another host.
    squeezed = re.sub(r"[\x00-\x20\x7f]", "", text).replace("\\", "/")
    try:
        parts = urlsplit(squeezed)
    except ValueError:
        return None
    if parts.scheme:
        return text if parts.scheme.lower() in SAFE_SCHEMES else None
    if squeezed.startswith("//"):  # protocol-relative: a remote URL in disguise
        return "https:" + squeezed
    if ":" in squeezed.split("/", 1)[0]:
        return None
    return text


def _is_remote(url: str) -> bool:
    return urlsplit(url).scheme.lower() in ("http", "https")


class _SafeRenderer(RendererHTML):
    def link_open(
        self, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
    ) -> str:
        token = tokens[idx]
        href = safe_url(str(token.attrGet("href") or ""))
        if href is None:
            token.attrs.pop("href", None)
            token.meta["dropped"] = True
            return '<span class="unsafe-link">'
        token.attrSet("href", href)
        token.attrSet("rel", LINK_REL)
        if _is_remote(href):
            token.attrSet("target", "_blank")
        return self.renderToken(tokens, idx, options, env)

    def link_close(
        self, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
    ) -> str:
        # Find the matching opener (links do not nest in CommonMark).
        for j in range(idx - 1, -1, -1):
            if tokens[j].type == "link_open":
                if tokens[j].meta.get("dropped"):
                    return "</span>"
                break
        return "</a>"

    def image(self, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        token = tokens[idx]
        alt = self.renderInlineAsText(token.children or [], options, env)
        src = safe_url(str(token.attrGet("src") or ""))
        if src is None:
            return f'<span class="unsafe-link">{escapeHtml(alt)}</span>'
        if _is_remote(src):
            label = escapeHtml(alt or src)
            return (
                f'<button type="button" class="remote-image" data-src="{escapeHtml(src)}" '
                f'data-alt="{escapeHtml(alt)}">{label}</button>'
            )
        return f'<img src="{escapeHtml(src)}" alt="{escapeHtml(alt)}" loading="lazy">'

    def html_inline(
        self, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
    ) -> str:
        # With html=False only the tasklists plugin emits html_inline: rebuild
        # its checkbox ourselves rather than trusting the string.
        content = tokens[idx].content
        if "task-list-item-checkbox" not in content:
            return escapeHtml(content)
        index = env.setdefault("task_index", 0)
        env["task_index"] = index + 1
        checked = " checked" if 'checked="checked"' in content else ""
        return (
            f'<input class="task-list-item-checkbox" type="checkbox" data-task="{index}"{checked}>'
        )

    html_block = html_inline  # unreachable with html=False; escaped if ever reached

    def text(self, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        text = tokens[idx].content
        if env.get("link_depth", 0) or "#" not in text:
            return escapeHtml(text)
        out, last = [], 0
        for m in TAG_RE.finditer(text):
            if tag_levels(m.group(1)) is None:
                continue  # not a tag (too long or too deep): stays text, as in derive()
            out.append(escapeHtml(text[last : m.start()]))
            tag = m.group(1).rstrip("/")
            out.append(f'<span class="tag" data-tag="{escapeHtml(tag)}">#{escapeHtml(tag)}</span>')
            out.append(escapeHtml(m.group(1)[len(tag) :]))
            last = m.end()
        out.append(escapeHtml(text[last:]))
        return "".join(out)

    def renderInline(self, tokens: Sequence[Token], options: OptionsDict, env: EnvType) -> str:
        out = []
        for i, token in enumerate(tokens):
            if token.type == "link_close":
                env["link_depth"] = env.get("link_depth", 1) - 1
            rule = self.rules.get(token.type)
            out.append(
                rule(tokens, i, options, env) if rule else self.renderToken(tokens, i, options, env)
            )
            if token.type == "link_open":
                env["link_depth"] = env.get("link_depth", 0) + 1
        return "".join(out)


def _strip_styles(state: Any) -> None:
    # Table alignment arrives as style="text-align:..."; the page's CSP forbids
    # inline styles, so carry it as a class instead.
    for token in state.tokens:
        style = token.attrGet("style")
        if style:
            token.attrs.pop("style", None)
            align = str(style).removeprefix("text-align:")
            token.attrSet("class", f"align-{align}")


# Bumped whenever the HTML for a given content changes: cached renderings of
# another version are ignored (app.memos.html_cache).
RENDERER_VERSION = 1


@lru_cache(maxsize=1)
def parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"linkify": True, "html": False}, renderer_cls=_SafeRenderer)
    md.enable(["table", "strikethrough", "linkify"])
    md.use(tasklists_plugin)
    md.core.ruler.push("strip_styles", _strip_styles)
    return md


def render_html(content: str) -> str:
    """Safe HTML for ``content`` (see the module docstring for the guarantees).

    On the calling thread: request paths go through app.memos.parse_pool.
    """
    return str(parser().render(content, {}))
