"""The application factory: the only place where Daybook is wired together."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

from litestar import Litestar, Request, get
from litestar.di import Provide
from litestar.enums import ScopeType
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import ScalarRenderPlugin
from litestar.types import Receive, Scope, Send

from app import __version__
from app.api.body_limits import BodyLimitMiddleware
from app.api.json_depth import JsonDepthMiddleware
from app.attachments.routes import AttachmentController, FileController, MemoAttachmentController
from app.attachments.storage import store_from_settings
from app.auth.middleware import AuthMiddleware
from app.auth.passwords import make_hasher
from app.auth.routes import AuthController
from app.comments.routes import CommentController
from app.db.engine import create_engine
from app.db.migrate import upgrade
from app.deps import provide_access, provide_caller, provide_db, provide_now, provide_settings
from app.errors import EXCEPTION_HANDLERS
from app.feeds.routes import FeedController
from app.health import healthz, readyz
from app.instance.routes import InstanceController
from app.instance.secret import instance_secret
from app.logs import configure_logging, request_logging_middleware
from app.mcp.allowlist import ALLOWLIST as MCP_ALLOWLIST
from app.mcp.server import McpEndpoint
from app.memos.batch_routes import MemoBatchController
from app.memos.history_routes import MemoHistoryController
from app.memos.parse_pool import warm_pool
from app.memos.routes import MemoController
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
from app.users.routes import UserController
from app.views.routes import MemoViewController
from app.webui import WEB_HANDLERS

# AIP custom methods (`users/alice:getStats`, `memos:search`) are routed as
# `.../alice/:getStats`, because a path parameter cannot share a segment with
# a literal in Litestar's router. The rewrite is the inverse of the OpenAPI
# rendering below, so clients only ever see the AIP form.
# DOTALL and \Z: a percent-decoded path may hold a newline, which must not
# stop the rewrite (the route would then answer 405 instead of 404).
_CUSTOM_METHOD = re.compile(r"^(/api/v1/.*[^/]):([A-Za-z]+)\Z", re.DOTALL)


class Daybook(Litestar):
    """Litestar, with the custom-method rewrite applied before routing."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:  # type: ignore[override]
        if scope["type"] == ScopeType.HTTP:
            match = _CUSTOM_METHOD.match(scope["path"])
            if match:
                scope["path"] = f"{match.group(1)}/:{match.group(2)}"
                scope["raw_path"] = scope["path"].encode()
        await super().__call__(scope, receive, send)


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
            await upgrade(engine)
        # One signing secret per database, so processes with separate data
        # directories accept each other's page tokens (``secret`` overrides it).
        secret = settings.secret or await instance_secret(engine, settings.data_dir)
        app.state.settings = replace(settings, secret=secret)
        app.state.engine = engine
        try:
            yield
        finally:
            await engine.dispose()

    auth = DefineMiddleware(
        AuthMiddleware, exclude=["^/healthz$", "^/readyz$", "^/api/v1/openapi.json$", "^/schema"]
    )
    return Daybook(
        route_handlers=[
            healthz,
            readyz,
            openapi_document,
            AuthController,
            UserController,
            PortabilityController,
            TokenController,
            SearchController,  # before MemoController: /:search is static
            MemoBatchController,  # before MemoController: /:batchCreate is static
            MemoHistoryController,
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
            SpaceController,
            SpaceAccessController,
            mcp.route_handler,
            *WEB_HANDLERS,  # last: the SPA fallback never shadows the API
        ],
        dependencies={
            "db": Provide(provide_db),
            "caller": Provide(provide_caller, sync_to_thread=False),
            "now": Provide(provide_now, sync_to_thread=False),
            "settings": Provide(provide_settings, sync_to_thread=False),
            "access": Provide(provide_access),
        },
        middleware=[
            request_logging_middleware,
            # Bodies bounded per route and read whole before auth or a database
            # connection is spent on the request: see app.api.body_limits.
            DefineMiddleware(
                BodyLimitMiddleware,
                attachment_size=settings.attachment_size_limit,
                content_length=settings.content_length_limit,
            ),
            # Before anything decodes a body (auth included): see app.api.json_depth.
            DefineMiddleware(JsonDepthMiddleware, max_body=settings.max_request_body),
            auth,
        ],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=[
            warm_pool,
            database,
            search_lifespan(settings.embedding_model, settings.embed_worker, settings.search_floor),
            mcp.lifespan,
        ],
        state=_state(settings),
        request_max_body_size=settings.max_request_body,
        openapi_config=OpenAPIConfig(
            title="Daybook API",
            version=__version__,
            description="Memos-compatible REST API with spaces, restricted keys and search.",
            path="/schema",
            render_plugins=[ScalarRenderPlugin()],
        ),
        logging_config=None,
    )


def _state(settings: Settings) -> Any:
    from litestar.datastructures import State

    return State({"settings": settings, "hasher": make_hasher(settings.password_hasher)})
