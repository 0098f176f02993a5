"""A real Memos MCP server from PyPI against a live Daybook: ``memos-fastmcp`` 0.2.5.

It is built on FastMCP 3+ (pinned: fastmcp 4.2.3, on ``mcp`` 2 like Daybook),
so it installs beside Daybook from the dev extra; its console script
``memos-fastmcp`` runs on stdio with ``MEMOS_URL`` and ``MEMOS_TOKEN``.

Worth noting: its ``update_memo`` PATCHes without an ``updateMask``, relying
on Memos' gateway inferring the mask from the body's fields; Daybook does the
same. Its tag search and ``rename_tag``/``delete_tag`` write
``tags.contains('x')``, which Memos 0.31 rejects (``tags`` does not support
``contains()``), and so does Daybook, with a 400 naming the problem.
"""

from __future__ import annotations

import json
import pathlib
import sys

from tests.clients.conftest import account, call, call_error, stdio_mcp

SCRIPT = pathlib.Path(sys.executable).parent / "memos-fastmcp"


async def test_memo_flows_through_memos_fastmcp(sqlite_server: str, tmp_path: pathlib.Path) -> None:
    alice = account(sqlite_server, "alice")
    bob = account(sqlite_server, "bob", admin=alice)
    bob.post("/api/v1/memos", {"content": "bob's private deploy #ops", "visibility": "PRIVATE"})
    env = {"MEMOS_URL": sqlite_server, "MEMOS_TOKEN": alice.pat, "MEMOS_DISPLAY_STYLE": "list"}
    async with stdio_mcp(SCRIPT, env, tmp_path) as mcp:
        made = json.loads(
            await call(
                mcp, "create_memo", content="deploy on friday", visibility="PUBLIC", tags=["ops"]
            )
        )
        memo_id = made["memo_id"]
        assert made["content"] == "deploy on friday #ops" and made["tags"] == ["ops"]
        assert made["name"] == f"memos/{memo_id}" and made["visibility"] == "PUBLIC"
        other = json.loads(await call(mcp, "create_memo", content="water the plants #home"))

        listing = await call(mcp, "list_memos")
        assert memo_id in listing and other["memo_id"] in listing
        assert "bob's private deploy" not in listing
        found = await call(mcp, "search_memos", query="DEPLOY")
        assert memo_id in found and other["memo_id"] not in found
        tags = await call(mcp, "list_tags")
        assert "**ops**: 1" in tags and "**home**: 1" in tags  # bob's #ops is not counted

        # No updateMask on the PATCH: the mask is the body's fields, as Memos' gateway infers.
        edited = json.loads(
            await call(
                mcp,
                "update_memo",
                memo_id=memo_id,
                content="deploy on monday #ops",
                pinned=True,
            )
        )
        assert (edited["content"], edited["pinned"], edited["visibility"]) == (
            "deploy on monday #ops",
            True,
            "PUBLIC",  # not in the body, so not in the mask: unchanged
        )
        await call(mcp, "set_visibility", memo_id=memo_id, visibility="PROTECTED")
        detail = await call(mcp, "get_memo", memo_id=f"memos/{memo_id}")
        assert "deploy on monday #ops" in detail and "PROTECTED" in detail
        public = await call(mcp, "list_public_memos")
        assert memo_id not in public

        # As on Memos 0.31: `tags.contains` is refused, clearly, not a 500.
        refused = await call_error(mcp, "search_memos", tags=["ops"])
        assert "400" in refused and "contains()" in refused

        assert await call(mcp, "delete_memo", memo_id=other["memo_id"]) == "true"
        missing = await call_error(mcp, "get_memo", memo_id=other["memo_id"])
        assert "not found" in missing.lower()
    rest = alice.get(f"/api/v1/memos/{memo_id}")
    assert (rest["content"], rest["visibility"], rest["pinned"]) == (
        "deploy on monday #ops",
        "PROTECTED",
        True,
    )
