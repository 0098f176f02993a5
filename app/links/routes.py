"""``GET memos/-/linkMetadata`` and ``POST memos/-/linkMetadata:batchGet`` (Memos 0.31).

Signed-in users only: the server is not an anonymous fetching proxy. A URL
the guarded client refuses (private address, not http(s), too many
redirects, not HTML) is a 400 naming the reason; an unreachable or slow
page is a 502/504. In a batch, a URL that fails yields empty metadata in
its place (the order matches the request, as Memos documents).
"""

from __future__ import annotations

from typing import Annotated

import httpx
import msgspec
from litestar import Controller, get, post
from litestar.params import Parameter

from app.api.bounds import Url
from app.api.responses import errors
from app.api.structs import In, Out
from app.deps import requires_user
from app.errors import DaybookError, InvalidArgument
from app.links.metadata import decode, parse
from app.net import guarded
from app.settings import Settings

MAX_BATCH = 10  # Memos' maxBatchGetLinkMetadata
MAX_REDIRECTS = 3
HEADERS = {"User-Agent": "Daybook link preview", "Accept": "text/html"}


class BadGateway(DaybookError):
    status, grpc_code = 502, 14


class GatewayTimeout(DaybookError):
    status, grpc_code = 504, 4


class LinkMetadata(Out):
    url: str
    title: str
    description: str
    image: str


class BatchGetLinkMetadataRequest(In):
    urls: Annotated[list[Url], msgspec.Meta(max_length=MAX_BATCH)] = msgspec.field(
        default_factory=list
    )


class BatchGetLinkMetadataResponse(Out):
    link_metadata: list[LinkMetadata]


def limits(settings: Settings) -> guarded.Limits:
    """A preview reads the head of one page, following a few redirects (each checked)."""
    return guarded.Limits(
        deadline=settings.link_preview_timeout,
        max_bytes=settings.link_preview_max_bytes,
        max_redirects=MAX_REDIRECTS,
    )


async def fetch_metadata(url: str, settings: Settings) -> LinkMetadata:
    policy = guarded.Policy.parse(
        settings.link_preview_allow_private, setting="DAYBOOK_LINK_PREVIEW_ALLOW_PRIVATE"
    )
    try:
        page = await guarded.request(
            "GET", url, policy=policy, limits=limits(settings), headers=HEADERS
        )
    except (guarded.Refused, guarded.Unresolvable) as exc:
        raise InvalidArgument(f"url: {exc}") from None
    except TimeoutError:
        raise GatewayTimeout("url: the page did not answer in time") from None
    except (httpx.HTTPError, OSError):
        raise BadGateway("url: the page could not be fetched") from None
    if page.status_code != 200:
        raise InvalidArgument(f"url: the page answered HTTP {page.status_code}")
    kind = page.content_type.split(";", 1)[0].strip().lower()
    if kind not in ("text/html", "application/xhtml+xml", ""):
        raise InvalidArgument(f"url: the page is {kind}, not HTML")
    preview = parse(decode(page.body, page.content_type), page.url)
    return LinkMetadata(
        url=url, title=preview.title, description=preview.description, image=preview.image
    )


class LinkMetadataController(Controller):
    path = "/api/v1/memos/-/linkMetadata"
    tags = ("MemoService",)
    guards = [requires_user]  # noqa: RUF012 (Litestar's layer attribute)

    @get("", operation_id="MemoService_GetLinkMetadata", responses=errors())
    async def get_one(
        self, settings: Settings, url: Annotated[str, Parameter(query="url", max_length=2048)]
    ) -> LinkMetadata:
        return await fetch_metadata(url, settings)

    @post(
        "/:batchGet",
        operation_id="MemoService_BatchGetLinkMetadata",
        opt={"tx": "read"},
        status_code=200,
        responses=errors(),
    )
    async def batch_get(
        self, settings: Settings, data: BatchGetLinkMetadataRequest
    ) -> BatchGetLinkMetadataResponse:
        out = []
        for url in data.urls:
            try:
                out.append(await fetch_metadata(url, settings))
            except DaybookError:
                out.append(LinkMetadata(url=url, title="", description="", image=""))
        return BatchGetLinkMetadataResponse(link_metadata=out)
