"""``/explore/rss.xml`` and ``/u/{username}/rss.xml``.

Both read as an anonymous caller, whoever asks: the audience predicate for
``caller=None`` on a PUBLIC instance, plus ``visibility = 'PUBLIC'``, top-level
and NORMAL memos only, newest 50. On a PRIVATE instance the feeds do not
exist (404), so a feed URL can never become a way around sign-in.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, get
from litestar.params import Parameter

from app.access.audience import AccessMode
from app.api.context import RequestContext
from app.api.responses import errors
from app.errors import NotFound
from app.feeds.rss import render_feed
from app.feeds.service import active_user_id, feed_items
from app.instance.store import AccessSettings
from app.settings import Settings

MEDIA_TYPE = "application/rss+xml; charset=utf-8"


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
        ctx: RequestContext,
    ) -> Response[bytes]:
        _require_public(ctx.access)
        base = _base(ctx.settings, request)
        body = render_feed("Daybook: explore", base, "Public memos", await feed_items(ctx.db))
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
        ctx: RequestContext,
        username: Annotated[str, Parameter(max_length=64)],
    ) -> Response[bytes]:
        _require_public(ctx.access)
        user_id = await active_user_id(ctx.db, username)
        if user_id is None:
            raise NotFound(f"user {username!r} not found")
        base = _base(ctx.settings, request)
        items = await feed_items(ctx.db, user_id)
        body = render_feed(f"Daybook: {username}", base, f"Public memos by {username}", items)
        return Response(
            body, media_type=MEDIA_TYPE, headers={"Cache-Control": "public, max-age=60"}
        )
