"""``/explore/rss.xml`` and ``/u/{username}/rss.xml``.

Both read as an anonymous caller, whoever asks: the audience predicate for
``caller=None`` on a PUBLIC instance, plus ``visibility = 'PUBLIC'``, top-level
and NORMAL memos only, newest 50. On a PRIVATE instance the feeds do not
exist (404), so a feed URL can never become a way around sign-in.
"""

from __future__ import annotations

from typing import Annotated, Any

import sqlalchemy as sa
from litestar import Controller, Request, Response, get
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.admission import Admission, conditions
from app.access.audience import AccessMode
from app.api.responses import errors
from app.db.schema import memo, user_account
from app.errors import NotFound
from app.feeds.rss import FeedItem, render_feed
from app.instance.store import AccessSettings
from app.settings import Settings

FEED_SIZE = 50
MEDIA_TYPE = "application/rss+xml; charset=utf-8"


_PUBLIC = memo.c.visibility == "PUBLIC"


async def _items(conn: AsyncConnection, creator_id: int | None = None) -> list[FeedItem]:
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


def _base(settings: Settings, request: Request[Any, Any, Any]) -> str:
    return settings.public_url.rstrip("/") or str(request.base_url).rstrip("/")


def _require_public(access: AccessSettings) -> None:
    if access.access_mode is not AccessMode.PUBLIC:
        raise NotFound("feeds are not found on a private instance")


class FeedController(Controller):
    tags = ("Feeds",)

    @get(
        "/explore/rss.xml", operation_id="Feeds_Explore", media_type=MEDIA_TYPE, responses=errors()
    )
    async def explore(
        self,
        request: Request[Any, Any, Any],
        db: AsyncConnection,
        access: AccessSettings,
        settings: Settings,
    ) -> Response[bytes]:
        _require_public(access)
        base = _base(settings, request)
        body = render_feed("Daybook: explore", base, "Public memos", await _items(db))
        return Response(
            body, media_type=MEDIA_TYPE, headers={"Cache-Control": "public, max-age=60"}
        )

    @get(
        "/u/{username:str}/rss.xml",
        operation_id="Feeds_User",
        media_type=MEDIA_TYPE,
        responses=errors(),
    )
    async def user(
        self,
        request: Request[Any, Any, Any],
        db: AsyncConnection,
        access: AccessSettings,
        settings: Settings,
        username: Annotated[str, Parameter(max_length=64)],
    ) -> Response[bytes]:
        _require_public(access)
        user_id = (
            await db.execute(
                sa.select(user_account.c.id).where(
                    user_account.c.username == username, user_account.c.state == "NORMAL"
                )
            )
        ).scalar_one_or_none()
        if user_id is None:
            raise NotFound(f"user {username!r} not found")
        base = _base(settings, request)
        items = await _items(db, user_id)
        body = render_feed(f"Daybook: {username}", base, f"Public memos by {username}", items)
        return Response(
            body, media_type=MEDIA_TYPE, headers={"Cache-Control": "public, max-age=60"}
        )
