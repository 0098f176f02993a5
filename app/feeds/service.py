"""The feeds' SQL: the newest public memos, and the author a user feed names.

Both read as an anonymous caller on a PUBLIC instance, whoever asks
(``app.feeds.routes`` answers 404 on a PRIVATE one before reaching here).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.admission import Admission, conditions
from app.access.audience import AccessMode
from app.db.schema import memo, user_account
from app.feeds.rss import FeedItem

FEED_SIZE = 50

_PUBLIC = memo.c.visibility == "PUBLIC"


async def feed_items(conn: AsyncConnection, creator_id: int | None = None) -> list[FeedItem]:
    """The newest ``FEED_SIZE`` PUBLIC, top-level, NORMAL memos (of one author if given)."""
    # An alias, so the predicate's own EXISTS over user_account stays correlated to memo.
    author = user_account.alias("author")
    admission = Admission(None, AccessMode.PUBLIC, creator_id=creator_id, filter=_PUBLIC)
    stmt = (
        sa.select(memo.c.uid, memo.c.title, memo.c.content, memo.c.created_ts, author.c.username)
        .join(author, author.c.id == memo.c.creator_id)
        .where(*conditions(admission))
        .order_by(memo.c.created_ts.desc(), memo.c.id.desc())
        .limit(FEED_SIZE)
    )
    return [
        FeedItem(
            uid=r.uid, title=r.title, content=r.content, created_ts=r.created_ts, author=r.username
        )
        for r in await conn.execute(stmt)
    ]


async def active_user_id(conn: AsyncConnection, username: str) -> int | None:
    """The id of the NORMAL user with this name, or None (archived users have no feed)."""
    stmt = sa.select(user_account.c.id).where(
        user_account.c.username == username, user_account.c.state == "NORMAL"
    )
    user_id: int | None = (await conn.execute(stmt)).scalar_one_or_none()
    return user_id
