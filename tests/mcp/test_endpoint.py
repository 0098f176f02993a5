"""``/mcp`` over real HTTP with the SDK's own client: the transport rules and the allowlist."""

from __future__ import annotations

from typing import Any

import httpx
import httpx2
import pytest
import structlog
from litestar.testing import AsyncTestClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from app.mcp.allowlist import ALLOWLIST
from app.server import create_app
from tests.mcp.conftest import World, live_settings, mcp_session

# The contract (mcp.md), pinned: a new tool is a decision, not a side effect.
TOOLS = [
    "memo_list_memos",
    "memo_create_memo",
    "memo_get_memo",
    "memo_update_memo",
    "memo_delete_memo",
    "memo_list_memo_comments",
    "memo_create_memo_comment",
    "memo_list_memo_attachments",
    "memo_set_memo_attachments",
    "memo_list_memo_reactions",
    "memo_upsert_memo_reaction",
    "memo_delete_memo_reaction",
    "memo_list_memo_relations",
    "memo_set_memo_relations",
    "attachment_list_attachments",
    "attachment_create_attachment",
    "attachment_get_attachment",
    "attachment_delete_attachment",
    "memo_view_list_memo_views",
    "auth_get_current_user",
    "memo_search_memos",
    "memo_batch_create_memos",
    "memo_list_memo_history",
    "space_list_spaces",
    "space_get_access",
]

RPC = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


async def test_tool_list_is_exactly_the_allowlist(world: World) -> None:
    async with mcp_session(world.base, world.headers["session"]) as s:
        tools = (await s.list_tools()).tools
    assert [t.name for t in tools] == TOOLS
    by_name = {t.name: t for t in tools}
    for tool in tools:
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert "$ref" not in repr(schema) and "$ref" not in repr(tool.output_schema)
        assert tool.output_schema is not None and tool.output_schema.get("type") == "object"
        hints = tool.annotations
        assert hints is not None and hints.open_world_hint is False
        if tool.name.startswith(("memo_list", "memo_get", "attachment_list", "attachment_get")):
            assert hints.read_only_hint and hints.idempotent_hint, tool.name
    for name in ("memo_delete_memo", "attachment_delete_attachment", "memo_delete_memo_reaction"):
        a = by_name[name].annotations
        assert a is not None and a.destructive_hint and a.idempotent_hint and not a.read_only_hint
    for name in ("memo_set_memo_relations", "memo_set_memo_attachments"):
        a = by_name[name].annotations
        assert a is not None and a.destructive_hint and a.idempotent_hint
    a = by_name["memo_update_memo"].annotations
    assert a is not None and a.destructive_hint and not a.read_only_hint
    a = by_name["memo_create_memo"].annotations
    assert a is not None and not a.destructive_hint and not a.read_only_hint
    assert set(by_name["memo_get_memo"].input_schema["required"]) == {"memo"}
    assert "body" in by_name["memo_create_memo"].input_schema["properties"]


async def test_initialize_announces_tools_only_and_instructions(world: World) -> None:
    async with (
        httpx2.AsyncClient() as http,
        streamable_http_client(f"{world.base}/mcp", http_client=http) as (read, write),
    ):
        from mcp import ClientSession

        async with ClientSession(read, write) as s:
            init = await s.initialize()
    caps = init.capabilities
    assert caps.tools is not None
    assert caps.resources is None and caps.prompts is None and caps.logging is None
    text = init.instructions or ""
    assert '"work" in tags' in text and 'tag == "work"' in text
    assert "top-level memos only" in text and "tree" in text
    assert "auth_get_current_user" in text and "space_get_access" in text


async def test_modern_protocol_client_works(world: World) -> None:
    """The SDK's high-level Client negotiates the newest protocol (no initialize at all)."""
    async with (
        httpx2.AsyncClient(headers=world.headers["session"]) as http,
        Client(streamable_http_client(f"{world.base}/mcp", http_client=http)) as client,
    ):
        result = await client.call_tool("auth_get_current_user", {})
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["user"]["username"] == "alice"


async def test_get_and_delete_answer_405(world: World) -> None:
    async with httpx.AsyncClient(base_url=world.base) as http:
        for method in ("GET", "DELETE", "PUT"):
            r = await http.request(method, "/mcp", headers={**world.headers["session"], **RPC})
            assert r.status_code == 405, method
            assert r.headers["allow"] == "POST"
            assert r.headers["content-type"].startswith("application/json")  # no SSE stream


async def test_call_without_initialize_and_session_id_is_ignored(world: World) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "auth_get_current_user", "arguments": {}},
    }
    headers = {**world.headers["session"], **RPC, "Mcp-Session-Id": "not-a-session"}
    async with httpx.AsyncClient(base_url=world.base) as http:
        r = await http.post("/mcp", json=call, headers=headers)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in r.headers
    result = r.json()["result"]
    assert result["structuredContent"]["user"]["username"] == "alice"


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "null"}, 403),
        ({"Origin": "http://notes.example.com.evil.example"}, 403),
        ({"Host": "notes.example.com"}, 200),  # a proxy on loopback, public Host, no Origin
        ({"Host": "notes.example.com", "Origin": "https://notes.example.com"}, 200),
        ({"Host": "notes.example.com", "Origin": "https://evil.example"}, 403),
    ],
)
async def test_origin_check(world: World, headers: dict[str, str], status: int) -> None:
    async with httpx.AsyncClient(base_url=world.base) as http:
        r = await http.post("/mcp", json=LIST, headers={**RPC, **headers})
    assert r.status_code == status, r.text
    if status == 200:
        assert len(r.json()["result"]["tools"]) == len(TOOLS)


async def test_same_origin_browser_request_is_allowed(world: World) -> None:
    async with httpx.AsyncClient(base_url=world.base) as http:
        r = await http.post("/mcp", json=LIST, headers={**RPC, "Origin": world.base})
    assert r.status_code == 200


async def test_bad_token_is_401_before_mcp(world: World) -> None:
    async with httpx.AsyncClient(base_url=world.base) as http:
        r = await http.post("/mcp", json=LIST, headers={**RPC, "Authorization": "Bearer nope"})
    assert r.status_code == 401


INVALID = [
    ("memo_list_memos", {"bogus": 1}, 'unknown argument "bogus"'),
    ("memo_list_memos", {"pageSize": "ten"}, 'argument "pageSize" must be integer'),
    ("memo_get_memo", {}, 'missing required argument "memo"'),
    ("memo_create_memo", {}, 'missing required argument "body"'),
    ("memo_create_memo", {"body": {"content": 5}}, 'argument "body.content" must be string'),
    ("memo_create_memo", {"body": "hello"}, 'argument "body" must be an object'),
    ("memo_update_memo", {"memo": "x", "body": {}, "etag": "1"}, 'unknown argument "etag"'),
    ("memo_set_memo_relations", {"memo": "x", "body": {"relations": "all"}}, "body.relations"),
    ("no_such_tool", {}, 'unknown tool "no_such_tool"'),
]


async def test_invalid_arguments_never_reach_a_route(world: World) -> None:
    """Every request the app sees is logged; an invalid call must log only POST /mcp."""
    async with mcp_session(world.base, world.headers["session"]) as s:
        with structlog.testing.capture_logs() as logs:
            for tool, args, message in INVALID:
                result = await s.call_tool(tool, args)
                assert result.is_error, tool
                assert message in result.content[0].text, (tool, result.content[0].text)
                assert result.structured_content is None
        paths = [e["path"] for e in logs if e.get("event") == "request"]
        assert paths and all(p == "/mcp" for p in paths), paths
        # Positive control: a valid call does reach the route, through the same log.
        with structlog.testing.capture_logs() as logs:
            assert not (await s.call_tool("memo_list_memos", {"pageSize": 1})).is_error
        assert "/api/v1/memos" in [e["path"] for e in logs if e.get("event") == "request"]


async def test_path_arguments_take_an_id_or_a_name(world: World) -> None:
    name = world.memos["a_public"]
    async with mcp_session(world.base, world.headers["session"]) as s:
        by_name = await s.call_tool("memo_get_memo", {"memo": name})
        by_id = await s.call_tool("memo_get_memo", {"memo": name.split("/")[1]})
        escaped = await s.call_tool("memo_get_memo", {"memo": "../../auth/me"})
    assert not by_name.is_error and by_name.structured_content == by_id.structured_content
    assert escaped.is_error and escaped.content[0].text.startswith("404 Not Found")


async def test_results_are_objects_with_the_same_json_as_text(world: World) -> None:
    import json

    async with mcp_session(world.base, world.headers["session"]) as s:
        ok = await s.call_tool("memo_list_memo_reactions", {"memo": world.memos["a_public"]})
        missing = await s.call_tool("memo_get_memo", {"memo": "memos/doesnotexist"})
    assert isinstance(ok.structured_content, dict)
    assert json.loads(ok.content[0].text) == ok.structured_content
    assert missing.is_error and missing.structured_content is None
    assert missing.content[0].text.startswith("404 Not Found: ")
    assert "not found" in missing.content[0].text


def _messages(exc: BaseException) -> str:
    """Every message in an exception (group), flattened: lifespans fail inside task groups."""
    if isinstance(exc, BaseExceptionGroup):
        return " | ".join(_messages(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize(
    ("allowlist", "expected"),
    [
        ([*ALLOWLIST, "MemoService_Nope"], "McpConfigError: MCP allowlist names operations"),
        (
            ["MemoService_ListMemos", "MemoService_ListMemos"],
            "would share the name 'memo_list_memos'",
        ),
    ],
)
async def test_refuses_to_start(
    module_db: tuple[str, Any], allowlist: list[str], expected: str
) -> None:
    url, data = module_db
    app = create_app(live_settings(url, data), mcp_allowlist=allowlist)
    with pytest.raises(BaseException) as info:
        async with AsyncTestClient(app=app):
            pass
    assert expected in _messages(info.value)


async def test_trailing_slash_is_the_same_endpoint(world: World) -> None:
    async with httpx.AsyncClient(base_url=world.base) as http:
        r = await http.post("/mcp/", json=LIST, headers=RPC)
    assert r.status_code == 200 and len(r.json()["result"]["tools"]) == len(TOOLS)
