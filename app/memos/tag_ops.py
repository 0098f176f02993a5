"""Rename, merge and delete a tag across the caller's own memos.

Memos 0.31 has no tag routes (older Memos had ``memos/-/tags:rename`` and a
tag delete); Daybook offers both as custom methods on ``memos/-/tags``:

- ``POST /api/v1/memos/-/tags:rename`` ``{oldTag, newTag}``: every
  occurrence of ``#oldTag`` and of its sub-tags (``#oldTag/x``) in the
  caller's memos becomes ``#newTag`` (``#newTag/x``). Renaming into a tag
  that already exists is a merge: there is no separate operation.
- ``POST /api/v1/memos/-/tags:delete`` ``{tag}``: every occurrence of
  ``#tag`` and of its sub-tags loses its ``#``; the words stay, so a
  sentence such as "shipped #work today" still reads, and the memo's
  history keeps the old text (docs/decisions/0034).

Each changed memo is an ordinary update through
:func:`app.memos.service.update_memo` (the write rule of
:mod:`app.access.writes`, a new version and history event, the webhook),
all in the request's one transaction. Only memos the caller created and may
write now are touched (a memo in a space where the caller lost WRITE is
counted as ``skipped``, never half-written). A call rewrites at most
:data:`MAX_MEMOS` memos; ``remaining`` says how many still carry the tag, so
a client repeats the call until it is 0 (each call its own transaction).

Only occurrences the parser reads as tags are rewritten: text in fenced
code blocks and in inline code is left alone, as the tag index
ignores it (:mod:`app.memos.markdown`). Indented code blocks are not told
apart from an indented list continuation here, so a tag in one is rewritten.
"""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.api.structs import In, Out
from app.db.schema import memo, memo_tag
from app.errors import InvalidArgument
from app.memos.markdown import TAG_RE, tag_levels
from app.memos.schemas import MemoIn
from app.memos.service import WriteContext, may_write, update_memo

__all__ = [
    "MAX_MEMOS",
    "DeleteTagIn",
    "RenameTagIn",
    "TagRewrite",
    "normal_tag",
    "rewrite_content",
    "rewrite_tag",
]

MAX_MEMOS = 200  # memos rewritten by one call (one transaction)

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TICKS = re.compile(r"`+")


class RenameTagIn(In):
    old_tag: Any = None
    new_tag: Any = None


class DeleteTagIn(In):
    tag: Any = None


class TagRewrite(Out):
    """What one call changed: the memos rewritten, those it may not write, those left."""

    memos: list[str]  # names of the memos rewritten, newest first
    changed: int
    skipped: int  # the caller's memos with the tag that the write rule refuses
    remaining: int  # still carrying the tag after this call (0: done)


def normal_tag(raw: Any, field: str) -> str:
    """A tag as the index stores it (no ``#``, levels joined by ``/``); 400 if it is none."""
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidArgument(f"{field}: a tag is required")
    text = raw.strip()
    text = text[1:] if text.startswith("#") else text
    match = TAG_RE.fullmatch("#" + text)
    levels = tag_levels(text) if match else None
    if levels is None:
        raise InvalidArgument(
            f"{field}: {raw!r} is not a tag (letters, digits, '_', '-' and '/' between levels)"
        )
    return "/".join(levels)


def _code_spans(content: str) -> list[tuple[int, int]]:
    """Where the parser reads no tags: fenced code blocks and inline code."""
    spans: list[tuple[int, int]] = []
    pos, fence, begin = 0, "", 0
    for line in content.splitlines(keepends=True):
        opened = _FENCE_OPEN.match(line)
        if not fence and opened:
            fence, begin = opened.group(1), pos
        elif fence and line.strip().startswith(fence) and not line.strip(fence[0]).strip():
            spans.append((begin, pos + len(line)))
            fence = ""
        pos += len(line)
    if fence:  # an unclosed fence runs to the end
        spans.append((begin, len(content)))

    def inside(at: int) -> bool:
        return any(a <= at < b for a, b in spans)

    # Inline code: a run of N backticks closes at the next run of exactly N
    # (CommonMark). Linear: each run is looked at once, waiting openers are
    # kept per length.
    waiting: dict[int, int] = {}
    for m in _TICKS.finditer(content):
        if inside(m.start()):
            continue
        n = len(m.group())
        if n in waiting:
            spans.append((waiting.pop(n), m.end()))
            waiting = {k: v for k, v in waiting.items() if v > spans[-1][0]}
        else:
            waiting[n] = m.start()
    return spans


def rewrite_content(content: str, old: str, new: str | None) -> str:
    """``content`` with tag ``old`` (and its sub-tags) renamed to ``new``, or un-tagged if None.

    Pure. ``old`` and ``new`` are normal tags (:func:`normal_tag`).
    """
    spans = _code_spans(content)
    out: list[str] = []
    last = 0
    for m in TAG_RE.finditer(content):
        if any(a <= m.start() < b for a, b in spans):
            continue
        raw = m.group(1)
        trailing = raw[len(raw.rstrip("/")) :]
        levels = tag_levels(raw.rstrip("/"))
        if not levels:
            continue
        tag = "/".join(levels)
        if tag != old and not tag.startswith(old + "/"):
            continue
        rest = tag[len(old) :]
        out.append(content[last : m.start()])
        out.append((("#" + new) if new is not None else old) + rest + trailing)
        last = m.end()
    out.append(content[last:])
    return "".join(out)


async def rewrite_tag(
    conn: AsyncConnection, ctx: WriteContext, old: str, new: str | None
) -> TagRewrite:
    """Rewrite up to :data:`MAX_MEMOS` of the caller's memos carrying ``old``, in ``conn``."""
    if new is not None and (new == old or new.startswith(old + "/")):
        raise InvalidArgument(f"newTag: {new!r} is {old!r} or inside it; choose another tag")
    carrying = (
        sa.select(memo)
        .where(
            memo.c.creator_id == ctx.caller.user_id,
            memo.c.id.in_(sa.select(memo_tag.c.memo_id).where(memo_tag.c.tag == old)),
        )
        .order_by(memo.c.created_ts.desc(), memo.c.id.desc())
    )
    rows = (await conn.execute(carrying)).all()
    names: list[str] = []
    skipped = 0
    for row in rows:
        if len(names) >= MAX_MEMOS:
            break
        if not await may_write(conn, ctx.caller, row):
            skipped += 1
            continue
        content = rewrite_content(row.content, old, new)
        if content == row.content:  # the tag only in a form the rewrite does not touch
            skipped += 1
            continue
        await update_memo(conn, ctx, row, MemoIn(content=content), {"content"}, None)
        names.append(f"memos/{row.uid}")
    left = (
        await conn.execute(
            sa.select(sa.func.count())
            .select_from(memo_tag.join(memo, memo.c.id == memo_tag.c.memo_id))
            .where(memo.c.creator_id == ctx.caller.user_id, memo_tag.c.tag == old)
        )
    ).scalar_one()
    return TagRewrite(
        memos=names, changed=len(names), skipped=skipped, remaining=max(0, int(left) - skipped)
    )
