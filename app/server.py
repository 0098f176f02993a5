"""The application factory: the only place where Daybook is wired together."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

from litestar import Litestar, Request, get
from litestar.di import Provide
from litestar.enums import ScopeType
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.types import Receive, Scope, Send

from app import __version__
from app.api import cors
from app.api.body_limits import BodyLimitMiddleware
from app.api.json_depth import JsonDepthMiddleware
from app.api.page_cache import PageCache, PageCacheMiddleware
from app.api.reference import ReferenceRenderPlugin
from app.api.security_headers import with_html_csp
from app.attachments.routes import AttachmentController, FileController, MemoAttachmentController
from app.attachments.storage import incoming_dir, store_from_settings
from app.auth.caller_rows import CallerRows
from app.auth.middleware import AuthMiddleware
from app.auth.passwords import make_hasher
from app.auth.refresh import RefreshController
from app.auth.routes import AuthController
from app.comments.routes import CommentController
from app.db.engine import create_engine
from app.db.generation import open_generation
from app.db.statistics import statistics_lifespan
from app.deps import (
    close_abandoned_db,
    provide_access,
    provide_caller,
    provide_db,
    provide_now,
    provide_request_context,
    provide_settings,
)
from app.errors import EXCEPTION_HANDLERS
from app.feeds.routes import FeedController
from app.health import healthz, readyz
from app.instance.routes import InstanceController
from app.instance.secret import instance_secret
from app.limits.middleware import RateLimitMiddleware
from app.limits.policy import parse_overrides
from app.links.routes import LinkMetadataController
from app.logs import configure_logging, request_logging_middleware
from app.mcp.allowlist import ALLOWLIST as MCP_ALLOWLIST
from app.mcp.endpoint import McpEndpoint
from app.memos import chosen_ids
from app.memos.batch_routes import MemoBatchController
from app.memos.history_routes import MemoHistoryController
from app.memos.revert_routes import MemoRevertController
from app.memos.routes import MemoController
from app.memos.tag_routes import TagController
from app.memos.trash import retention_job
from app.memos.trash_routes import TrashController
from app.portability.routes import PortabilityController
from app.reactions.routes import ReactionController
from app.relations.routes import RelationController
from app.search.routes import SearchController
from app.search.runtime import search_lifespan
from app.settings import Settings
from app.shares.routes import MemoShareController, SharedMemoController
from app.spaces.access_routes import SpaceAccessController
from app.spaces.routes import SpaceController
from app.tokens.routes import TokenController
from app.users.batch_routes import UserBatchController
from app.users.routes import UserController
from app.users.settings_routes import UserSettingController
from app.views.routes import MemoViewController, ShortcutController
from app.webhooks.delivery import webhook_lifespan
from app.webhooks.routes import WebhookController
from app.webui import WEB_HANDLERS

# AIP custom methods (`users/alice:getStats`, `memos:search`) are routed as
# `.../alice/:getStats`, because a path parameter cannot share a segment with
# a literal in Litestar's router. The rewrite is the inverse of the OpenAPI
# rendering below, so clients only ever see the AIP form.
# DOTALL and \Z: a percent-decoded path may hold a newline, which must not
# stop the rewrite (the route would then answer 405 instead of 404).
_CUSTOM_METHOD = re.compile(r"^(/api/v1/.*[^/]):([A-Za-z]+)\Z", re.DOTALL)


class Daybook(Litestar):
    """Litestar, with what must run before routing for every request.

    - Forwarded headers (``X-Forwarded-For``/``-Proto``) are believed only from
      ``trusted_proxies`` (uvicorn's ``ProxyHeadersMiddleware``, applied here so
      that every ASGI server behaves alike; ``daybook serve`` turns uvicorn's
      own handling off, which by default trusts loopback). The client address
      keys sign-in throttling, so a spoofable one would rotate it away.
    - The custom-method rewrite (below).
    - A CSP on every HTML response (``app.api.security_headers``).
    - CORS (``app.api.cors``): preflights answered here, before routing (no
      route has an OPTIONS handler), and the response headers for an origin.
    """

    _proxied: Any = None
    cors_policy: cors.CorsPolicy = cors.CorsPolicy(False, frozenset())

    def trust_proxies(self, trusted: str) -> None:
        from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

        if trusted.strip():
            self._proxied = ProxyHeadersMiddleware(self._route, trusted_hosts=trusted)  # type: ignore[arg-type]

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        await super().__call__(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:  # type: ignore[override]
        if scope["type"] != ScopeType.HTTP:
            await super().__call__(scope, receive, send)
            return
        match = _CUSTOM_METHOD.match(scope["path"])
        if match:
            scope["path"] = f"{match.group(1)}/:{match.group(2)}"
            scope["raw_path"] = scope["path"].encode()
        send = with_html_csp(send)
        if self.cors_policy.enabled:
            if await cors.answer_preflight(self.cors_policy, scope, send):
                return
            send = cors.with_cors(self.cors_policy, scope, send)
        try:
            if self._proxied is not None:
                await self._proxied(scope, receive, send)
            else:
                await super().__call__(scope, receive, send)
        finally:
            await close_abandoned_db(scope)  # a dependency failed after provide_request_context
        if chosen_ids.SCOPE_FLAG in scope:  # after the request's transaction (decision 0023)
            await chosen_ids.count_marked(dict(scope), self.state.engine, int(time.time()))


@get("/api/v1/openapi.json", exclude_from_auth=True, include_in_schema=False)
async def openapi_document(request: Request[Any, Any, Any]) -> dict[str, Any]:
    return openapi_json(request.app)


def openapi_json(app: Litestar) -> dict[str, Any]:
    """The OpenAPI document as clients (and the MCP tool builder) see it."""
    schema = app.openapi_schema.to_schema()
    schema["paths"] = {path.replace("/:", ":"): item for path, item in schema["paths"].items()}
    return schema


def create_app(settings: Settings, *, mcp_allowlist: Sequence[str] = MCP_ALLOWLIST) -> Litestar:
    """The app; ``mcp_allowlist`` narrows the MCP tools (tests only)."""
    settings = settings.resolved()
    store_from_settings(settings)  # an incomplete storage setting fails here, at start
    mcp = McpEndpoint(settings, openapi_json, mcp_allowlist)
    configure_logging(settings.log_format)

    @contextlib.asynccontextmanager
    async def database(app: Litestar) -> AsyncIterator[None]:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        engine = create_engine(settings.database_url)
        if settings.migrate_on_start:
            # Imported here: Alembic (about 9 MB) stays out of the workers, which never migrate.
            from app.db.migrate import upgrade

            await upgrade(engine)
        # One signing secret per database, so processes with separate data
        # directories accept each other's page tokens (``secret`` overrides it).
        secret = settings.secret or await instance_secret(engine, settings.data_dir)
        app.state.settings = replace(settings, secret=secret)
        app.state.engine = engine
        app.state.generation = open_generation(engine)
        try:
            yield
        finally:
            app.state.generation.close()
            await engine.dispose()

    @contextlib.asynccontextmanager
    async def trash_retention(app: Litestar) -> AsyncIterator[None]:
        if settings.trash_purge_interval <= 0:
            yield
            return
        store = store_from_settings(settings)
        lease_ms = int(settings.job_lease_seconds * 1000)
        async with retention_job(
            app.state.engine, store, settings.trash_purge_interval, lease_ms=lease_ms
        ):
            yield

    auth = DefineMiddleware(
        AuthMiddleware, exclude=["^/healthz$", "^/readyz$", "^/api/v1/openapi.json$", "^/schema"]
    )
    # After auth (the caller keys the budget), before any handler or transaction.
    limits = (
        [
            DefineMiddleware(
                RateLimitMiddleware,
                policies=parse_overrides(settings.rate_limit_policies),
                lease=settings.rate_limit_lease,
            )
        ]
        if settings.rate_limits
        else []
    )
    app = Daybook(
        route_handlers=[
            healthz,
            readyz,
            openapi_document,
            AuthController,
            RefreshController,
            UserBatchController,  # before UserController: /:batchGet, /:stats are static
            UserController,
            UserSettingController,
            PortabilityController,
            TokenController,
            WebhookController,
            SearchController,  # before MemoController: /:search is static
            LinkMetadataController,  # before MemoController: /-/linkMetadata is static
            TagController,  # before MemoController: /-/tags is static
            MemoBatchController,  # before MemoController: /:batchCreate is static
            MemoHistoryController,
            MemoRevertController,
            TrashController,  # before MemoController and InstanceController: static paths
            MemoController,
            CommentController,
            RelationController,
            ReactionController,
            AttachmentController,
            MemoAttachmentController,
            FileController,
            MemoShareController,
            SharedMemoController,
            FeedController,
            InstanceController,
            MemoViewController,
            ShortcutController,
            SpaceController,
            SpaceAccessController,
            mcp.route_handler,
            *WEB_HANDLERS,  # last: the SPA fallback never shadows the API
        ],
        dependencies={
            # ``ctx`` owns the request's transaction; ``db`` and ``access`` are
            # read off it (one provider, no task group: app.deps).
            "ctx": Provide(provide_request_context),
            "db": Provide(provide_db, sync_to_thread=False),
            "access": Provide(provide_access, sync_to_thread=False),
            "caller": Provide(provide_caller, sync_to_thread=False),
            "now": Provide(provide_now, sync_to_thread=False),
            "settings": Provide(provide_settings, sync_to_thread=False),
        },
        middleware=[
            request_logging_middleware,
            # Bodies bounded per route and read whole before auth or a database
            # connection is spent on the request: see app.api.body_limits.
            DefineMiddleware(
                BodyLimitMiddleware,
                attachment_size=settings.attachment_size_limit,
                content_length=settings.content_length_limit,
                spool_dir=incoming_dir(settings),
            ),
            # Before anything decodes a body (auth included): see app.api.json_depth.
            DefineMiddleware(JsonDepthMiddleware, max_body=settings.max_request_body),
            auth,
            *limits,
            # Last: a kept answer is served after auth and limits, before any
            # dependency takes a slot or a connection (app.api.page_cache).
            PageCacheMiddleware,
        ],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=[
            database,
            trash_retention,
            statistics_lifespan(),
            search_lifespan(
                settings.embedding_model,
                settings.embed_worker,
                settings.search_floor,
                lease_ms=int(settings.job_lease_seconds * 1000),
                model_cache=settings.model_cache_dir or settings.data_dir / "cache",
            ),
            mcp.lifespan,
            webhook_lifespan(settings.webhook_worker),
        ],
        state=_state(settings),
        request_max_body_size=settings.max_request_body,
        openapi_config=OpenAPIConfig(
            title="Daybook API",
            version=__version__,
            description="Memos-compatible REST API with spaces, restricted keys and search.",
            path="/schema",
            render_plugins=[ReferenceRenderPlugin()],
        ),
        logging_config=None,
    )
    app.trust_proxies(settings.trusted_proxies)
    app.cors_policy = cors.parse_origins(settings.cors_origins)
    return app


def _state(settings: Settings) -> Any:
    from litestar.datastructures import State

    from app.db.slots import RequestSlots

    return State(
        {
            "settings": settings,
            "hasher": make_hasher(settings.password_hasher),
            "slots": RequestSlots(),
            "page_cache": PageCache(settings.page_cache_bytes)
            if settings.page_cache_bytes > 0
            else None,
            # Used only where the generation is local (SQLite): app.auth.caller_rows.
            "caller_rows": CallerRows(),
        }
    )
