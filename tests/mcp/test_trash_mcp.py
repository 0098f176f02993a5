"""MCP after the trash: ``memo_delete_memo`` trashes, and no MCP read returns the memo.

Its own module: the module-scoped world of tests/mcp/conftest.py is changed here.
"""

from __future__ import annotations

from tests.mcp.conftest import World, mcp_session
from tests.mcp.test_parity import names_via_mcp


async def test_a_memo_trashed_through_mcp_is_gone_from_every_mcp_read(world: World) -> None:
    m = world.memos
    assert m["a_public"] in await names_via_mcp(world, "session")  # the control
    async with mcp_session(world.base, world.headers["read_key"]) as s:
        refused = await s.call_tool("memo_delete_memo", {"memo": m["a_public"]})
    assert refused.is_error  # a READ key cannot trash
    async with mcp_session(world.base, world.headers["session"]) as s:
        done = await s.call_tool("memo_delete_memo", {"memo": m["a_public"]})
        assert not done.is_error, done.content
        for tool in (
            "memo_get_memo",
            "memo_list_memo_comments",
            "memo_list_memo_relations",
            "memo_list_memo_reactions",
            "memo_list_memo_attachments",
            "memo_list_memo_history",
        ):
            result = await s.call_tool(tool, {"memo": m["a_public"]})
            assert result.is_error and result.content[0].text.startswith("404"), tool
    for principal in ("session", "pat", "bob", "anonymous", "read_key", "write_key"):
        assert m["a_public"] not in await names_via_mcp(world, principal), principal
