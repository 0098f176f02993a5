"""The pure parts of MCP: names, schemas, argument checks, the Origin rule, results."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.mcp.allowlist import ALLOWLIST, tool_name
from app.mcp.arguments import ArgumentError, ToolArguments
from app.mcp.invoke import to_result
from app.mcp.origin import origin_allowed
from app.mcp.tools import McpConfigError, build_tool_specs, check_allowlist, resolve
from tests.mcp.test_endpoint import TOOLS


def test_tool_names_follow_memos() -> None:
    assert [tool_name(op) for op in ALLOWLIST] == TOOLS
    assert tool_name("MemoViewService_ListMemoViews") == "memo_view_list_memo_views"
    with pytest.raises(ValueError):
        tool_name("ListMemos")


def test_a_name_collision_refuses() -> None:
    ops = ["MemoService_ViewListMemos", "MemoViewService_ListMemos"]  # both memo_view_list_memos
    with pytest.raises(McpConfigError, match="memo_view_list_memos"):
        check_allowlist(ops, ops)
    with pytest.raises(McpConfigError, match="MemoService_Gone"):
        check_allowlist(["MemoService_Gone"], ["MemoService_ListMemos"])


def test_recursive_refs_are_cut_and_unknown_refs_refuse() -> None:
    components = {
        "Node": {"type": "object", "properties": {"child": {"$ref": "#/components/schemas/Node"}}}
    }
    node = resolve({"$ref": "#/components/schemas/Node"}, components)
    assert node["properties"]["child"] == {}
    with pytest.raises(McpConfigError):
        resolve({"$ref": "#/components/schemas/Missing"}, components)


DOC: dict[str, Any] = {
    "paths": {
        "/api/v1/memos/{memo}": {
            "patch": {
                "operationId": "MemoService_UpdateMemo",
                "parameters": [
                    {
                        "name": "memo",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string", "maxLength": 8},
                    },
                    {
                        "name": "updateMask",
                        "in": "query",
                        "schema": {"oneOf": [{"type": "string"}, {"type": "null"}]},
                    },
                    {
                        "name": "pageSize",
                        "in": "query",
                        "schema": {"oneOf": [{"type": "integer"}, {"type": "null"}]},
                    },
                    {"name": "If-Match", "in": "header", "schema": {"type": "string"}},
                ],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/MemoIn"}}
                    },
                },
                "responses": {
                    "200": {
                        "content": {
                            "application/json": {
                                "schema": {"type": "array", "items": {"type": "string"}}
                            }
                        }
                    }
                },
            }
        }
    },
    "components": {
        "schemas": {
            "MemoIn": {
                "type": "object",
                "properties": {
                    "content": {"oneOf": [{"type": "string"}]},
                    "pinned": {"type": "boolean"},
                },
                "required": ["content"],
            }
        }
    },
}


def spec() -> Any:
    return build_tool_specs(DOC, ["MemoService_UpdateMemo"])[0]


def test_input_schema_shape() -> None:
    s = spec()
    schema = s.input_schema
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {"memo", "updateMask", "pageSize", "body"}  # no header
    assert schema["required"] == ["memo", "body"]
    assert schema["properties"]["pageSize"]["type"] == "integer"
    assert schema["properties"]["body"]["properties"]["content"] == {"type": "string"}
    assert s.output_schema["properties"]["result"]["type"] == "array" and s.wraps_array
    assert s.destructive and not s.read_only and not s.idempotent


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"memo": "a", "body": {"content": "x"}, "x": 1}, 'unknown argument "x"'),
        ({"body": {"content": "x"}}, 'missing required argument "memo"'),
        ({"memo": "a", "body": {}}, 'missing required argument "body.content"'),
        (
            {"memo": "a", "body": {"content": "x"}, "pageSize": "2"},
            'argument "pageSize" must be integer',
        ),
        (
            {"memo": "a", "body": {"content": "x", "pinned": "yes"}},
            'argument "body.pinned" must be boolean',
        ),
        (
            {"memo": "..", "body": {"content": "x"}},
            'argument "memo" must be an id or a resource name',
        ),
    ],
)
def test_argument_messages(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ArgumentError) as info:
        ToolArguments(spec()).to_call(args)
    assert str(info.value) == message


def test_call_is_built_from_valid_arguments() -> None:
    call = ToolArguments(spec()).to_call(
        {"memo": "memos/abc", "updateMask": "content", "pageSize": None, "body": {"content": "é"}}
    )
    assert (call.method, call.path, call.query_string) == (
        "PATCH",
        "/api/v1/memos/abc",
        b"updateMask=content",
    )
    assert json.loads(call.body or b"") == {"content": "é"}


@pytest.mark.parametrize(
    ("origin", "host", "public", "allowed"),
    [
        (None, "anything", "", True),
        ("http://127.0.0.1:5230", "127.0.0.1:5230", "", True),
        ("http://127.0.0.1:5231", "127.0.0.1:5230", "", False),
        ("https://notes.example.com", "notes.example.com", "", True),
        ("https://notes.example.com", "notes.example.com:443", "", True),
        ("https://Notes.Example.com", "127.0.0.1:5230", "https://notes.example.com/", True),
        ("https://evil.example", "127.0.0.1:5230", "https://notes.example.com", False),
        ("null", "127.0.0.1:5230", "", False),
        ("file://", "127.0.0.1:5230", "", False),
        ("http://[::1]:5230", "[::1]:5230", "", True),
    ],
)
def test_origin_rule(origin: str | None, host: str, public: str, allowed: bool) -> None:
    assert origin_allowed(origin, host, public) is allowed


def test_results_are_normalised() -> None:
    ok = to_result(200, b"[1, 2]")
    assert ok.structured_content == {"result": [1, 2]} and json.loads(ok.content[0].text) == {
        "result": [1, 2]
    }
    assert to_result(200, b"").structured_content == {"ok": True}
    assert to_result(200, b"{}").structured_content == {"ok": True}
    err = to_result(404, b'{"code": 5, "message": "memo not found", "details": []}')
    assert err.is_error and err.structured_content is None
    assert err.content[0].text == "404 Not Found: memo not found"
