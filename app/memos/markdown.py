"""What Daybook derives from a memo's Markdown, in one markdown-it pass.

The derived values (flags, title, tags, snippet) are stored as real columns
on every write, so filters on them are index lookups rather than parses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.tasklists import tasklists_plugin

# A tag starts after whitespace or punctuation other than '#', '/' and word
# characters (so "a#b" and "##" are not tags), and may contain letters of any
# script, digits, '_', '-' and '/' for hierarchy.
TAG_RE = re.compile(r"(?<![\w#/&])#([^\W][\w\-/]*)")
SNIPPET_LENGTH = 100

# Bounds on derived tags (docs/decisions/0017-input-bounds.md). Tags are an
# index of the content, not the content: an occurrence past a bound is left
# as text (not a tag) rather than refusing the memo, so notes imported from
# Memos always save. Without them an 8 KiB "#a/a/a/..." derived 16.8 M
# characters of ancestors, and PostgreSQL refused tags over 256 characters.
MAX_TAG_LENGTH = 128  # characters of one tag (its ancestors are shorter)
MAX_TAG_DEPTH = 16  # levels: "a/b/c" has 3
MAX_TAGS = 256  # tags stored per memo, ancestors included, in order of first appearance


@dataclass(frozen=True, slots=True)
class MemoProperties:
    title: str
    has_link: bool
    has_task_list: bool
    has_code: bool
    has_incomplete_tasks: bool
    tags: tuple[str, ...]  # with ancestors, in order of first appearance
    snippet: str


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"linkify": True, "html": False})
    md.enable(["table", "strikethrough", "linkify"])
    md.use(tasklists_plugin)
    return md


def tag_levels(raw: str) -> list[str] | None:
    """The levels of one ``#tag`` occurrence (text after the ``#``), or None if it is no tag.

    Empty levels are dropped (``a//b`` is ``a/b``); an occurrence longer than
    :data:`MAX_TAG_LENGTH` or deeper than :data:`MAX_TAG_DEPTH` is not a tag.
    """
    if len(raw) > 2 * MAX_TAG_LENGTH + 1:  # cheap: no split of an 8 KiB run
        return None
    levels = [p for p in raw.split("/") if p]
    if not levels or len(levels) > MAX_TAG_DEPTH or len("/".join(levels)) > MAX_TAG_LENGTH:
        return None
    return levels


def with_ancestors(tags: list[str]) -> tuple[str, ...]:
    """``["book/fiction"]`` → ``("book", "book/fiction")``, de-duplicated in order.

    At most :data:`MAX_TAGS` are kept (the first, in order of appearance).
    """
    seen: dict[str, None] = {}
    for tag in tags:
        levels = tag_levels(tag) or []
        for i in range(1, len(levels) + 1):
            seen.setdefault("/".join(levels[:i]), None)
            if len(seen) == MAX_TAGS:
                return tuple(seen)
    return tuple(seen)


def _walk_inline(children: list[Token], found: list[str], text_out: list[str]) -> bool:
    """Collect tags from text outside links and code; return whether a link was seen."""
    has_link = False
    link_depth = 0
    for tok in children:
        if tok.type == "link_open":
            has_link = True
            link_depth += 1
        elif tok.type == "link_close":
            link_depth -= 1
        elif tok.type == "text":
            text_out.append(tok.content)
            if link_depth == 0:
                found.extend(TAG_RE.findall(tok.content))
        elif tok.type == "code_inline":
            text_out.append(tok.content)
        elif tok.type in ("softbreak", "hardbreak"):
            text_out.append(" ")
    return has_link


def derive(content: str) -> MemoProperties:
    """Derive the stored properties of ``content`` (on the calling thread: see app.memos.parse)."""
    return derive_tokens(_parser().parse(content))


def derive_tokens(tokens: Sequence[Token]) -> MemoProperties:
    """The stored properties from a parse of the memo's Markdown."""
    has_link = has_code = has_tasks = has_open_tasks = False
    title = ""
    raw_tags: list[str] = []
    text: list[str] = []
    first_block = True
    for i, tok in enumerate(tokens):
        if tok.type in ("fence", "code_block"):
            has_code = True
            text.append(tok.content)
        elif tok.type == "heading_open" and first_block and tok.tag == "h1":
            inline = tokens[i + 1]
            title = "".join(
                c.content for c in (inline.children or []) if c.type in ("text", "code_inline")
            ).strip()
        elif tok.type == "list_item_open" and "task-list-item" in str(tok.attrGet("class") or ""):
            has_tasks = True
        elif tok.type == "inline":
            children = tok.children or []
            if any(c.type == "code_inline" for c in children):
                has_code = True
            for child in children:
                if child.type == "html_inline" and "task-list-item-checkbox" in child.content:
                    has_tasks = True
                    if 'checked="checked"' not in child.content:
                        has_open_tasks = True
            has_link |= _walk_inline(children, raw_tags, text)
            text.append(" ")
        if tok.level == 0 and tok.nesting in (0, -1) and tok.type != "inline":
            first_block = False
    tags = with_ancestors([t.rstrip("/") for t in raw_tags if t.rstrip("/")])
    snippet = " ".join("".join(text).split())
    if len(snippet) > SNIPPET_LENGTH:
        snippet = snippet[: SNIPPET_LENGTH - 1].rstrip() + "…"
    return MemoProperties(
        title=title,
        has_link=has_link,
        has_task_list=has_tasks,
        has_code=has_code,
        has_incomplete_tasks=has_open_tasks,
        tags=tags,
        snippet=snippet,
    )
