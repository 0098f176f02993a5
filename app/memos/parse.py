"""One parse of a memo's Markdown: the stored properties and the safe HTML together.

:func:`parse` is pure and CPU-bound, and it is what the worker processes of
:mod:`app.memos.parse_pool` run: markdown-it is superlinear on some inputs
(``"!["`` repeated 4,095 times costs about half a second, and a mebibyte of
it hours), so it never runs on the event loop beyond a few hundred bytes.
:func:`plain` is the bounded fallback when a parse runs out of time: linear
regular expressions over the text, and the text escaped as HTML.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markdown_it.common.utils import escapeHtml

from app.memos import safe_html
from app.memos.markdown import SNIPPET_LENGTH, TAG_RE, MemoProperties, derive_tokens, with_ancestors

__all__ = ["Parsed", "parse", "plain"]

# Only [ \t] inside a line and bounded digits: linear on any input (no
# backtracking across newlines, unlike a leading \s*).
_TASK = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\[([ xX])\]", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Parsed:
    props: MemoProperties
    html: str
    degraded: bool = False  # True: produced by plain(), the parse ran out of time


def parse(content: str) -> Parsed:
    """Properties and HTML from one markdown-it pass (the renderer's own tokens)."""
    md = safe_html.parser()
    env: dict[str, object] = {}
    tokens = md.parse(content, env)
    props = derive_tokens(tokens)  # before rendering: the renderer edits link tokens
    html = md.renderer.render(tokens, md.options, env)
    return Parsed(props, str(html))


def plain(content: str) -> Parsed:
    """A linear-time stand-in for :func:`parse`: the text as text.

    Tags are every ``#tag`` occurrence (code is not told apart), links and
    code are recognised by their marks (``://``, a backtick), task items by
    their line pattern; there is no title. The HTML is the escaped text.
    """
    tasks = [m.group(1) for m in _TASK.finditer(content)]
    head = " ".join(content[: SNIPPET_LENGTH * 4].split())
    snippet = head if len(head) <= SNIPPET_LENGTH else head[: SNIPPET_LENGTH - 1].rstrip() + "…"
    props = MemoProperties(
        title="",
        has_link="://" in content,
        has_task_list=bool(tasks),
        has_code="`" in content,
        has_incomplete_tasks=" " in tasks,
        tags=with_ancestors([t.rstrip("/") for t in TAG_RE.findall(content) if t.rstrip("/")]),
        snippet=snippet,
    )
    html = '<p class="unrendered">' + escapeHtml(content).replace("\n", "<br>\n") + "</p>\n"
    return Parsed(props, html, degraded=True)
