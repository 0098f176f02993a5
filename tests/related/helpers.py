"""Small helpers shared by the related-object tests."""

from __future__ import annotations

import base64
from typing import Any

from litestar.testing import AsyncTestClient

from tests.conftest import Actor
from tests.support import make_public, restricted_key

__all__ = ["comment", "make_public", "names_of", "restricted_key", "upload"]


async def comment(actor: Actor, parent: dict[str, Any], content: str, **fields: Any) -> Any:
    return await actor.post(
        f"/api/v1/{parent['name']}/comments", json={"content": content, **fields}
    )


async def upload(
    actor: Actor, filename: str, data: bytes, mime: str = "text/plain", **fields: Any
) -> dict[str, Any]:
    r = await actor.post(
        "/api/v1/attachments",
        json={
            "filename": filename,
            "type": mime,
            "content": base64.b64encode(data).decode(),
            **fields,
        },
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


async def names_of(
    who: Actor | AsyncTestClient[Any], url: str, field: str = "memos", **kw: Any
) -> list[str]:
    r = await who.get(url, **kw)
    assert r.status_code == 200, r.text
    return [m["name"] for m in r.json()[field]]
