"""A real Memos MCP server from PyPI against a live Daybook: ``memos-mcp-enhanced`` 0.2.2.

Its console script ``memos-mcp-enhanced`` runs on stdio with
``MEMOS_INSTANCE_URL`` and ``MEMOS_API_TOKEN``, in its own venv (it imports
``mcp.server.fastmcp``, so ``mcp<2``; ``requirements/``), driven by the MCP
SDK's client. It reports failures as ``{"success": false}`` inside a
successful tool result, so every call below checks ``success``.

Covered: create with tags and pin, upload an attachment (base64 JSON) and bind
it with ``updateMask=attachments``, list its attachments, by-tag and keyword
search with CEL (``'x' in tags``, ``content.contains``, ``pinned == true``),
update with a mask (content by tags, visibility, ``display_time``), archive
(one memo, and a batch by tag, which writes the pre-0.24 ``rowStatus``),
todos (create, list by tag and pin, complete one box, then all), the
current user (``/auth/me``), delete.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from mcp import ClientSession

from tests.clients.conftest import account, call, stdio_mcp
from tests.clients.venvs import client_venv


@pytest.fixture(scope="module")
def script() -> pathlib.Path:
    return client_venv("memos-mcp-enhanced") / "memos-mcp-enhanced"


async def ok(session: ClientSession, tool: str, **arguments: Any) -> Any:
    answer = json.loads(await call(session, tool, **arguments))
    assert answer["success"] is True, (tool, arguments, answer)
    return answer["data"]


async def test_memo_flows_through_memos_mcp_enhanced(
    sqlite_server: str, script: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    alice = account(sqlite_server, "alice")
    bob = account(sqlite_server, "bob", admin=alice)
    bob.post("/api/v1/memos", {"content": "bob's #rel notes about the release"})  # PRIVATE
    upload = tmp_path / "notes.txt"
    upload.write_bytes(b"release checklist\n")
    env = {"MEMOS_INSTANCE_URL": sqlite_server, "MEMOS_API_TOKEN": alice.pat}
    async with stdio_mcp(script, env, tmp_path) as mcp:
        me = await ok(mcp, "get_current_user")
        assert (me["username"], me["role"]) == ("alice", "ADMIN")

        made = await ok(
            mcp,
            "create_memo",
            content="cut the release",
            visibility="PUBLIC",
            tags=["rel"],
            pinned=True,
        )
        memo = made["id"]
        assert made["content"] == "cut the release #rel" and made["tags"] == ["rel"]
        assert made["pinned"] is True and made["visibility"] == "PUBLIC"
        plain = await ok(mcp, "create_memo", content="lunch at noon")

        uploaded = await ok(mcp, "upload_resource", file_path=str(upload))
        attachment = uploaded["name"] if "name" in uploaded else uploaded["id"]
        assert attachment.startswith("attachments/")
        await ok(mcp, "set_memo_resources", memo_id=memo, resource_ids=[attachment])
        listed = await ok(mcp, "list_memo_resources", memo_id=memo)
        assert [(r["id"], r["filename"]) for r in listed["resources"]] == [
            (attachment, "notes.txt")
        ]
        file = alice.raw(f"/file/{attachment}/notes.txt")
        assert file == b"release checklist\n"

        by_tag = await ok(mcp, "get_memos_by_tag", tag="rel")
        assert [m["id"] for m in by_tag["memos"]] == [memo]  # bob's PRIVATE #rel is not alice's
        found = await ok(mcp, "search_memos", keyword="RELEASE", tags=["rel"], pinned=True)
        assert [m["id"] for m in found["memos"]] == [memo]
        assert (await ok(mcp, "search_memos", keyword="nothing like it"))["memos"] == []

        edited = await ok(
            mcp,
            "update_memo",
            memo_id=memo,
            tags=["rel", "v2"],
            visibility="PROTECTED",
            display_time="2020-01-02T03:04:05Z",
        )
        assert edited["content"] == "cut the release #rel #v2"
        assert (edited["visibility"], edited["tags"]) == ("PROTECTED", ["rel", "v2"])
        assert edited["display_time"] == "2020-01-02T03:04:05Z"
        rest = alice.get(f"/api/v1/{memo}")
        assert [a["name"] for a in rest["attachments"]] == [attachment]  # kept by the edit

        todo = await ok(mcp, "create_todo", items=["pack", "ship"], pinned=True)
        todos = await ok(mcp, "list_todos", pinned_only=True)
        assert [m["id"] for m in todos["todos"]] == [todo["id"]]
        await ok(mcp, "complete_todo", memo_id=todo["id"], item_index=1)
        half = alice.get(f"/api/v1/{todo['id']}")
        assert half["content"] == "- [x] pack\n- [ ] ship #todo"
        assert half["property"]["hasIncompleteTasks"] is True
        await ok(mcp, "complete_todo", memo_id=todo["id"])
        done = alice.get(f"/api/v1/{todo['id']}")
        assert done["property"]["hasIncompleteTasks"] is False and done["state"] == "NORMAL"

        # Its batch archive writes Memos < 0.24's rowStatus (mask and body): Daybook
        # reads it as state (it was a 400 "unknown path"; Memos 0.31 ignores it).
        preview = await ok(mcp, "batch_operation", operation="archive", filter_tags=["v2"])
        assert preview["count"] == 1
        batch = await ok(
            mcp, "batch_operation", operation="archive", filter_tags=["v2"], confirm=True
        )
        assert (batch["success_count"], batch["errors"]) == (1, None)
        archived = await ok(mcp, "search_memos", state="ARCHIVED")
        assert [m["id"] for m in archived["memos"]] == [memo]

        await ok(mcp, "archive_memo", memo_id=plain["id"])
        assert alice.get(f"/api/v1/{plain['id']}")["state"] == "ARCHIVED"
        await ok(mcp, "delete_memo", memo_id=plain["id"])
        remaining = await ok(mcp, "list_memos")
        assert [m["id"] for m in remaining] == [todo["id"]]  # one archived, one in the trash
