"""MCP answers exactly what REST answers, for every principal, and never more.

Each read tool is called through MCP and its REST operation is called
directly with the same credential; the JSON must be equal (arrays wrapped as
``{"result": ...}``, empty bodies as ``{"ok": true}``), and an error must carry
the same status. A restricted key is additionally checked for what it must
NOT see, and every write tool must fail for a READ key with no side effect.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.mcp.conftest import World, mcp_session

PRINCIPALS = ["session", "pat", "anonymous", "bob", "read_key", "read_key_none", "write_key"]


def reads(w: World) -> list[tuple[str, dict[str, Any], str]]:
    """(tool, arguments, the REST URL for the same call)."""
    pub, prot, share = w.memos["a_public"], w.memos["a_protected"], w.memos["a_share"]
    out: list[tuple[str, dict[str, Any], str]] = [
        ("auth_get_current_user", {}, "/api/v1/auth/me"),
        ("memo_list_memos", {}, "/api/v1/memos"),
        (
            "memo_list_memos",
            {"filter": '"work" in tags', "pageSize": 3},
            "/api/v1/memos?filter=%22work%22%20in%20tags&pageSize=3",
        ),
        ("memo_list_memos", {"state": "ARCHIVED"}, "/api/v1/memos?state=ARCHIVED"),
        (
            "memo_search_memos",
            {"query": "alice", "mode": "lexical"},
            "/api/v1/memos:search?query=alice&mode=lexical",
        ),
        ("memo_list_memo_comments", {"memo": pub}, f"/api/v1/{pub}/comments"),
        ("memo_list_memo_attachments", {"memo": pub}, f"/api/v1/{pub}/attachments"),
        ("memo_list_memo_reactions", {"memo": pub}, f"/api/v1/{pub}/reactions"),
        ("memo_list_memo_relations", {"memo": pub}, f"/api/v1/{pub}/relations"),
        ("memo_list_memo_history", {"memo": prot}, f"/api/v1/{prot}/history"),
        ("attachment_list_attachments", {}, "/api/v1/attachments"),
        ("attachment_get_attachment", {"attachment": w.attachment}, f"/api/v1/{w.attachment}"),
        ("memo_view_list_memo_views", {"user": "users/alice"}, "/api/v1/users/alice/views"),
        ("space_list_spaces", {}, "/api/v1/spaces"),
        ("space_get_access", {"space": w.space}, f"/api/v1/{w.space}/access"),
        ("memo_get_memo", {"memo": share}, f"/api/v1/{share}"),
    ]
    for label, name in w.memos.items():
        out.append(("memo_get_memo", {"memo": name}, f"/api/v1/{name}#{label}"))
    return out


def as_structured(body: Any) -> Any:
    if body in (None, {}):
        return {"ok": True}
    return body if isinstance(body, dict) else {"result": body}


@pytest.mark.parametrize("principal", PRINCIPALS)
async def test_every_read_tool_answers_what_rest_answers(world: World, principal: str) -> None:
    headers = world.headers[principal]
    async with (
        httpx.AsyncClient(base_url=world.base, headers=headers) as http,
        mcp_session(world.base, headers) as s,
    ):
        for tool, args, url in reads(world):
            rest = await http.get(url.split("#")[0])
            result = await s.call_tool(tool, args)
            where = f"{principal} {tool} {args}"
            if rest.status_code == 200:
                assert not result.is_error, (where, result.content)
                assert result.structured_content == as_structured(rest.json()), where
                assert json.loads(result.content[0].text) == result.structured_content
            else:
                assert result.is_error, (where, rest.status_code)
                assert result.structured_content is None
                text = result.content[0].text
                assert (
                    text == f"{rest.status_code} {rest.reason_phrase}: {rest.json()['message']}"
                ), where


async def names_via_mcp(world: World, principal: str) -> set[str]:
    async with mcp_session(world.base, world.headers[principal]) as s:
        listed = await s.call_tool("memo_list_memos", {"pageSize": 100})
        found = await s.call_tool("memo_search_memos", {"query": "alice", "mode": "lexical"})
    assert not listed.is_error and not found.is_error
    assert listed.structured_content is not None and found.structured_content is not None
    names = {m["name"] for m in listed.structured_content["memos"]}
    hits = found.structured_content
    for item in hits.get("memos", []) + [r.get("memo", {}) for r in hits.get("results", [])]:
        if "name" in item:
            names.add(item["name"])
    return names


async def test_restricted_read_key_sees_only_its_ceiling(world: World) -> None:
    """personal OWN + the team space capped at share: alice's own and share, nothing else."""
    m = world.memos
    seen = await names_via_mcp(world, "read_key")
    assert {m["a_private"], m["a_public"], m["a_share"]} <= seen
    assert not seen & {m["a_home"], m["b_protected"], m["b_private"]}, "outside the key's ceiling"
    async with mcp_session(world.base, world.headers["read_key"]) as s:
        home = await s.call_tool("memo_get_memo", {"memo": m["a_home"]})
        access = await s.call_tool("space_get_access", {"space": world.space})
    assert home.is_error and home.content[0].text.startswith("404 Not Found")
    assert not access.is_error
    none = await names_via_mcp(world, "read_key_none")
    assert not none & {m["a_private"], m["a_public"], m["a_protected"], m["b_protected"]}


def writes(w: World) -> list[tuple[str, dict[str, Any]]]:
    pub, prot = w.memos["a_public"], w.memos["a_protected"]
    return [
        ("memo_create_memo", {"body": {"content": "by a read key"}}),
        (
            "memo_update_memo",
            {"memo": prot, "updateMask": "content", "body": {"content": "changed"}},
        ),
        ("memo_delete_memo", {"memo": w.memos["a_private"]}),
        ("memo_create_memo_comment", {"memo": pub, "body": {"content": "read-key comment"}}),
        ("memo_set_memo_attachments", {"memo": pub, "body": {"attachments": []}}),
        ("memo_upsert_memo_reaction", {"memo": pub, "body": {"reactionType": "🚫"}}),
        ("memo_delete_memo_reaction", {"memo": pub, "reaction": w.reaction or "1"}),
        ("memo_set_memo_relations", {"memo": pub, "body": {"relations": []}}),
        ("attachment_create_attachment", {"body": {"filename": "x.txt", "content": "aGk="}}),
        ("attachment_delete_attachment", {"attachment": w.attachment}),
        ("memo_batch_create_memos", {"body": {"memos": [{"content": "batch by a read key"}]}}),
    ]


async def snapshot(world: World) -> Any:
    async with httpx.AsyncClient(base_url=world.base, headers=world.headers["session"]) as http:
        pub = world.memos["a_public"]
        urls = [
            "/api/v1/memos?pageSize=100",
            f"/api/v1/{pub}",
            "/api/v1/attachments",
            f"/api/v1/{pub}/comments",
        ]
        return [(await http.get(u)).json() for u in urls]


async def test_every_write_tool_fails_for_a_read_key(world: World) -> None:
    before = await snapshot(world)
    async with mcp_session(world.base, world.headers["read_key"]) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        attempted = writes(world)
        # Pinned: every tool that is not read-only is attempted here.
        writable = {
            n for n, t in tools.items() if not (t.annotations and t.annotations.read_only_hint)
        }
        assert {tool for tool, _ in attempted} == writable
        for tool, args in attempted:
            result = await s.call_tool(tool, args)
            assert result.is_error, (tool, result.structured_content)
            assert result.content[0].text.startswith(("403 ", "404 ")), (
                tool,
                result.content[0].text,
            )
    assert await snapshot(world) == before, "a refused write left a side effect"


async def test_space_write_without_a_tree_fails_clearly(world: World) -> None:
    async with mcp_session(world.base, world.headers["write_key"]) as s:
        body = {"content": "agent note", "visibility": "SPACE", "space": world.space}
        refused = await s.call_tool("memo_create_memo", {"body": body})
        made = await s.call_tool("memo_create_memo", {"body": {**body, "tree": "share"}})
    assert refused.is_error
    assert refused.content[0].text.startswith("400 Bad Request: tree: required for a memo in a space")
    assert not made.is_error and made.structured_content is not None
    assert made.structured_content["tree"] == "share"
    assert made.structured_content["origin"] != {} and "agent" in json.dumps(
        made.structured_content["origin"]
    )
