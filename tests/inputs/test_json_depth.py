"""Deeply nested JSON is a 400 before anything recurses (issue 13 item 13).

msgspec's decoder and the body checks recurse per level, so a body nested 600
to 3,000 levels deep raised RecursionError (a 500) on every route, anonymous
sign-in included. The depth is now measured on the raw bytes, iteratively,
before any decoder sees them, for every body: REST routes and ``/mcp``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from tests.conftest import Actor

MAX_JSON_DEPTH = 64  # app.api.json_depth.MAX_JSON_DEPTH (not imported: these run on old code too)
DEPTHS = [MAX_JSON_DEPTH + 1, 600, 1000, 3000, 100_000]


def nested(depth: int, opener: str = "[", closer: str = "]", core: str = "1") -> str:
    return opener * depth + core + closer * depth


def in_field(depth: int, field: str = "name") -> str:
    """A valid-looking body whose ignored field holds a deep value."""
    return json.dumps({"content": "x"})[:-1] + f', "{field}": ' + nested(depth) + "}"


def _assert_depth_400(r: Any) -> None:
    assert r.status_code == 400, r.text[:300]
    body = r.json()
    assert body["code"] == 3 and "deep" in body["message"], body


@pytest.mark.parametrize("depth", DEPTHS)
async def test_anonymous_sign_in_with_deep_json_is_a_400(
    client: AsyncTestClient[Any], alice: Actor, depth: int
) -> None:
    for body in (nested(depth), nested(depth, "{", "}", ""), '{"a": ' + nested(depth) + "}"):
        r = await client.post(
            "/api/v1/auth/signin", content=body, headers={"Content-Type": "application/json"}
        )
        if len(body) > 64 * 1024:  # past sign-in's body limit: refused unread (decision 0018)
            assert r.status_code == 413, r.text[:300]
            continue
        _assert_depth_400(r)


@pytest.mark.parametrize("depth", [600, 3000])
@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("POST", "/api/v1/memos"),
        ("POST", "/api/v1/memos:batchCreate"),
        ("POST", "/api/v1/users"),
        ("POST", "/api/v1/users/alice/personalAccessTokens"),
        ("POST", "/api/v1/users/alice/views"),
        ("PATCH", "/api/v1/instance/settings/ACCESS"),
        ("POST", "/api/v1/spaces"),
        ("POST", "/api/v1/attachments"),
    ],
)
async def test_every_body_refuses_deep_json(
    alice: Actor, method: str, url: str, depth: int
) -> None:
    for body in (in_field(depth), in_field(depth, "restriction"), nested(depth)):
        r = await alice.request(
            method, url, content=body, headers={"Content-Type": "application/json"}
        )
        _assert_depth_400(r)


async def test_deep_json_with_another_content_type_is_refused(alice: Actor) -> None:
    for ctype in ("text/plain", "application/x-anything", None):
        headers = {"Content-Type": ctype} if ctype else {}
        r = await alice.post("/api/v1/memos", content=in_field(2000), headers=headers)
        assert r.status_code == 400, (ctype, r.text[:200])


async def test_mcp_refuses_deep_json_rpc(alice: Actor) -> None:
    body = (
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
        '"memo_create_memo", "arguments": {"content": "x", "x": ' + nested(3000) + "}}}"
    )
    r = await alice.post(
        "/mcp",
        content=body,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    _assert_depth_400(r)


async def test_shallow_bodies_still_work(alice: Actor) -> None:
    """Depth up to the limit is fine, and brackets inside strings do not count."""
    r = await alice.post(
        "/api/v1/memos",
        content=in_field(MAX_JSON_DEPTH - 1).replace('"x"', json.dumps("[[[[{{{{" * 500), 1),
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 200, r.text[:300]
    assert r.json()["content"] == "[[[[{{{{" * 500
