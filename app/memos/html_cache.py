"""A memo's rendered HTML, kept beside it in the database (``memo_html``).

The write that stores a memo's content stores its HTML too, from the same
parse (:mod:`app.memos.parse_pool`), in the same transaction, so a timeline
read with ``?view=html`` only reads rows: no Markdown is parsed on a read.
Several processes share the database, so the cache lives there rather than
in one process's memory.

A stored rendering is used only while its ``content_hash`` is the hash of
the memo's current content and its ``renderer`` the running renderer's
version; that check, made on every read, is the invalidation (a content
change by any writer, an older process included, or a new renderer makes the
row stale without any trigger). A stale or missing rendering (memos written
before migration 0009) is rendered off the loop on read and kept in a small
in-process cache keyed by content hash: a pure function's results, valid in
any process.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.schema import memo_html
from app.memos import schemas
from app.memos.parse_pool import parse_memo
from app.memos.rows import MemoRow
from app.memos.safe_html import RENDERER_VERSION

__all__ = ["attach_html", "content_hash", "store_html"]

_FALLBACK_CHARS = 16 * 1024 * 1024  # bound of the in-process cache, in characters of HTML
_fallback: OrderedDict[str, str] = OrderedDict()
_fallback_chars = 0


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()


async def store_html(
    conn: AsyncConnection, memo_id: int, content: str, html: str, *, fresh: bool = False
) -> None:
    """Store ``html`` as the rendering of ``content``, in the caller's transaction.

    One statement (an upsert; a plain insert for a memo created in this
    transaction, ``fresh``): it runs under the write lock.
    """
    values = {
        "memo_id": memo_id,
        "renderer": RENDERER_VERSION,
        "content_hash": content_hash(content),
        "html": html,
    }
    await conn.execute(_INSERT if fresh else _upsert(conn.dialect.name), values)


# Built once, the values bound at execution (see app.memos.service._DELETE_TAGS).
_INSERT = memo_html.insert()


@functools.lru_cache(maxsize=4)
def _upsert(dialect: str) -> Any:
    insert = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(memo_html)
    return insert.on_conflict_do_update(
        index_elements=[memo_html.c.memo_id],
        set_={k: insert.excluded[k] for k in ("renderer", "content_hash", "html")},
    )


async def attach_html(
    conn: AsyncConnection, memos: Sequence[schemas.Memo], rows: Sequence[MemoRow]
) -> None:
    """Fill ``content_html`` on presented memos (the ``view=html`` opt-in).

    ``memos`` are ``rows`` presented, in the same order; only their ids are
    read from ``memo_html``.
    """
    if not rows:
        return
    stored = {
        r.memo_id: r
        for r in await conn.execute(
            sa.select(memo_html).where(memo_html.c.memo_id.in_([row.id for row in rows]))
        )
    }
    missing: list[tuple[schemas.Memo, str, str]] = []
    for memo, row in zip(memos, rows, strict=True):
        digest = content_hash(row.content)
        entry = stored.get(row.id)
        if entry is not None and (entry.renderer, entry.content_hash) == (RENDERER_VERSION, digest):
            memo.content_html = entry.html
        else:
            missing.append((memo, row.content, digest))
    rendered = await asyncio.gather(*(_render(content, digest) for _, content, digest in missing))
    for (memo, _, _), html in zip(missing, rendered, strict=True):
        memo.content_html = html


async def _render(content: str, digest: str) -> str:
    global _fallback_chars
    html = _fallback.get(digest)
    if html is not None:
        _fallback.move_to_end(digest)
        return html
    html = (await parse_memo(content)).html
    _fallback[digest] = html
    _fallback_chars += len(html)
    while _fallback_chars > _FALLBACK_CHARS and _fallback:
        _, dropped = _fallback.popitem(last=False)
        _fallback_chars -= len(dropped)
    return html
