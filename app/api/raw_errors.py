"""The error body (``{"code", "message", "details"}``) sent straight over ASGI.

For the few places that answer before Litestar has a request to answer with
(the body limits, the JSON depth guard, the MCP route's own checks): the same
body ``app.errors`` renders for handlers, with its content type and length.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from litestar.types import Send

__all__ = ["send_error"]


async def send_error(
    send: Send,
    status: int,
    code: int,
    message: str,
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    """One whole response: ``status`` with the error body, plus ``headers``."""
    body = json.dumps({"code": code, "message": message, "details": []}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})
