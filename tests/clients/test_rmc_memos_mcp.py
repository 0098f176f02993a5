"""A real Memos MCP server from PyPI against a live Daybook: ``rmc-memos-mcp`` 0.1.7.

Its console script ``rmc-memos-mcp`` runs on stdio with ``MEMOS_URL`` and
``MEMOS_TOKEN``, in its own venv (it needs ``mcp<2``; ``requirements/``), and
is driven by the MCP SDK's client the way an agent host drives it: create,
list with a CEL tag filter, get by bare id, update with an update mask
(content, visibility, pinned, state), search by content, delete.

Two of its tools cannot work on Memos 0.31 either, and are not counted as
Daybook's to fix: ``get_user_info`` reads ``GET /auth/me`` as a bare User
(0.31 wraps it in ``{"user": ...}``), and ``search_memos`` writes the
pre-0.23 ``content_search == [...]`` filter, which 0.31 rejects as an unknown
identifier; Daybook answers both exactly as 0.31 does.
"""

from __future__ import annotations

import pathlib

import pytest

from tests.clients.conftest import account, call, call_error, call_json, stdio_mcp
from tests.clients.venvs import client_venv


@pytest.fixture(scope="module")
def script() -> pathlib.Path:
    return client_venv("rmc-memos-mcp") / "rmc-memos-mcp"


async def test_memo_flows_through_rmc_memos_mcp(
    sqlite_server: str, script: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    alice = account(sqlite_server, "alice")
    bob = account(sqlite_server, "bob", admin=alice)
    env = {"MEMOS_URL": sqlite_server, "MEMOS_TOKEN": alice.pat}
    async with stdio_mcp(script, env, tmp_path) as mcp:
        made = await call_json(
            mcp, "create_memo", content="ship the #release notes", visibility="PROTECTED"
        )
        other = await call_json(mcp, "create_memo", content="groceries #home")
        assert made["name"].startswith("memos/") and made["tags"] == ["release"]
        assert (made["visibility"], made["state"], made["creator"]) == (
            "PROTECTED",
            "NORMAL",
            "users/alice",
        )
        bob.post("/api/v1/memos", {"content": "bob's own #release plan"})  # PRIVATE

        tagged = await call_json(mcp, "list_memos", filter_str='"release" in tags')
        assert [m["name"] for m in tagged["memos"]] == [made["name"]]  # not bob's PRIVATE one
        everything = await call_json(mcp, "list_memos", limit=1)
        assert len(everything["memos"]) == 1 and everything["nextPageToken"]
        paged = await call_json(mcp, "list_memos", limit=1, page_token=everything["nextPageToken"])
        assert {m["name"] for m in everything["memos"] + paged["memos"]} == {
            made["name"],
            other["name"],
        }
        found = await call_json(mcp, "list_memos", filter_str='content.contains("RELEASE")')
        assert [m["name"] for m in found["memos"]] == [made["name"]]

        bare_id = made["name"].removeprefix("memos/")
        got = await call_json(mcp, "get_memo", name=bare_id)
        assert got["content"] == "ship the #release notes"

        edited = await call_json(
            mcp,
            "update_memo",
            name=bare_id,
            content="shipped the #release notes #done",
            visibility="PUBLIC",
            pinned=True,
        )
        assert (edited["visibility"], edited["pinned"], edited["tags"]) == (
            "PUBLIC",
            True,
            ["release", "done"],
        )
        await call_json(mcp, "update_memo", name=made["name"], state="ARCHIVED")
        archived = await call_json(mcp, "list_memos", state="ARCHIVED")
        assert [m["name"] for m in archived["memos"]] == [made["name"]]
        normal = await call_json(mcp, "list_memos")
        assert [m["name"] for m in normal["memos"]] == [other["name"]]

        # As on Memos 0.31: the pre-0.23 filter is a clear 400, passed on as a tool error.
        legacy = await call_error(mcp, "search_memos", query="groceries")
        assert "400" in legacy and "content_search" in legacy

        assert "deleted" in await call(mcp, "delete_memo", name=other["name"])
    rest = alice.get(f"/api/v1/{made['name']}")
    assert rest["content"] == "shipped the #release notes #done" and rest["state"] == "ARCHIVED"
    assert alice.get("/api/v1/memos")["memos"] == []  # other is in the trash, made archived
