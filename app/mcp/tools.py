"""OpenAPI → tool specifications: pure, so the whole derivation is unit-testable.

Each allowlisted operation becomes one tool. Its input schema puts the path
and query parameters at the top level and the request body under ``body``,
with ``additionalProperties: false``; every ``$ref`` is inlined from the
document's components, so a client needs nothing but the tool list. Header
parameters (``If-Match``) are not exposed: a tool call carries no headers of
its own, and the credential is never an argument.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.mcp.allowlist import BODY_FALLBACKS, DESTRUCTIVE, HINTS, IDEMPOTENT, tool_name

__all__ = ["BODY", "McpConfigError", "ToolSpec", "build_tool_specs"]

BODY = "body"
_METHODS = ("get", "post", "put", "patch", "delete")


class McpConfigError(RuntimeError):
    """The allowlist and the OpenAPI document disagree: the server must not start."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    operation_id: str
    method: str  # upper case
    path: str  # template, e.g. /api/v1/memos/{memo}
    path_params: tuple[str, ...]
    query_params: tuple[str, ...]
    has_body: bool
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    read_only: bool
    destructive: bool
    idempotent: bool
    wraps_array: bool = field(default=False)


def build_tool_specs(document: Mapping[str, Any], allowlist: Iterable[str]) -> list[ToolSpec]:
    """One spec per allowlisted operation, in allowlist order.

    Raises ``McpConfigError`` when an operation is missing from the document
    or two operations would share a tool name.
    """
    wanted = list(allowlist)
    check_allowlist(wanted, operation_index(document))
    index = operation_index(document)
    components = document.get("components", {}).get("schemas", {})
    return [_spec(op_id, *index[op_id], components) for op_id in wanted]


def operation_index(document: Mapping[str, Any]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """operationId → (method, path, operation object)."""
    index: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for path, item in document.get("paths", {}).items():
        for method in _METHODS:
            operation = item.get(method)
            if isinstance(operation, dict) and "operationId" in operation:
                index[operation["operationId"]] = (method.upper(), path, operation)
    return index


def check_allowlist(allowlist: Iterable[str], available: Iterable[str]) -> None:
    """Refuse an allowlist naming an absent operation, or two operations under one tool name."""
    present = set(available)
    wanted = list(allowlist)
    missing = [op for op in wanted if op not in present]
    if missing:
        raise McpConfigError(
            "MCP allowlist names operations that the OpenAPI document does not have: "
            f"{', '.join(missing)}. Restore or rename the route (operation_id), or update "
            "app/mcp/allowlist.py together with docs/decisions/0010-mcp.md."
        )
    seen: dict[str, str] = {}
    for op in wanted:
        name = tool_name(op)
        if name in seen:
            raise McpConfigError(
                f"MCP tools would share the name {name!r}: {seen[name]} and {op}. "
                "Rename one operation_id."
            )
        seen[name] = op


def _spec(
    op_id: str, method: str, path: str, operation: dict[str, Any], components: Mapping[str, Any]
) -> ToolSpec:
    name = tool_name(op_id)
    properties: dict[str, Any] = {}
    required: list[str] = []
    path_params: list[str] = []
    query_params: list[str] = []
    for param in operation.get("parameters", []):
        where, pname = param.get("in"), param["name"]
        if where not in ("path", "query"):
            continue
        schema = simplify(resolve(param.get("schema", {}), components), parameter=True)
        if param.get("description") and "description" not in schema:
            schema["description"] = param["description"]
        if where == "path":
            path_params.append(pname)
            schema.pop("maxLength", None)  # a full resource name is longer than the id
            note = f"an id, or the resource name (e.g. {pname}s/{{id}})"
            schema["description"] = f"{schema.get('description', '')} ({note})".strip()
            required.append(pname)
        else:
            query_params.append(pname)
            if param.get("required"):
                required.append(pname)
        if pname in properties or pname == BODY:
            raise McpConfigError(f"{op_id}: parameter {pname!r} clashes with another argument")
        properties[pname] = schema
    body = _request_body(op_id, operation, components)
    if body is not None:
        schema, body_required = body
        properties[BODY] = schema
        if body_required:
            required.append(BODY)
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        input_schema["required"] = required
    output_schema, wraps_array = _output_schema(operation, components)
    read_only = method == "GET"
    return ToolSpec(
        name=name,
        operation_id=op_id,
        method=method,
        path=path,
        path_params=tuple(path_params),
        query_params=tuple(query_params),
        has_body=body is not None,
        description=_description(op_id, method, path, operation),
        input_schema=input_schema,
        output_schema=output_schema,
        read_only=read_only,
        destructive=method == "DELETE" or op_id in DESTRUCTIVE,
        idempotent=method in ("GET", "DELETE") or op_id in IDEMPOTENT,
        wraps_array=wraps_array,
    )


def _request_body(
    op_id: str, operation: Mapping[str, Any], components: Mapping[str, Any]
) -> tuple[dict[str, Any], bool] | None:
    content = operation.get("requestBody", {}).get("content", {})
    if "application/json" in content:
        schema = simplify(resolve(content["application/json"].get("schema", {}), components))
        return schema, bool(operation["requestBody"].get("required"))
    if op_id in BODY_FALLBACKS:
        return copy.deepcopy(dict(BODY_FALLBACKS[op_id])), True
    return None


_OK = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


def _output_schema(
    operation: Mapping[str, Any], components: Mapping[str, Any]
) -> tuple[dict[str, Any], bool]:
    """The 2xx JSON schema as an object: arrays wrapped as ``{result}``, none as ``{ok}``."""
    for status, response in sorted(operation.get("responses", {}).items()):
        if not str(status).startswith("2"):
            continue
        schema = response.get("content", {}).get("application/json", {}).get("schema")
        if schema is None:
            break
        schema = simplify(resolve(schema, components))
        if schema.get("type") == "array":
            wrapped = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
            return wrapped, True
        if schema.get("type") == "object" and schema.get("required"):
            return schema, False
        # An object with nothing required may come back empty, which is answered as {ok: true}.
        if schema.get("type") == "object":
            return {"anyOf": [schema, _OK], "type": "object"}, False
        break
    return copy.deepcopy(_OK), False


def _description(op_id: str, method: str, path: str, operation: Mapping[str, Any]) -> str:
    parts = [HINTS.get(op_id, ""), operation.get("description", "")]
    parts.append(f"REST: {method} {path} ({op_id}).")
    return " ".join(p.strip() for p in parts if p and p.strip())


def resolve(schema: Any, components: Mapping[str, Any], _seen: frozenset[str] = frozenset()) -> Any:
    """``schema`` with every ``#/components/schemas/X`` reference inlined.

    A reference back into itself (a recursive type) becomes ``{}`` (any value):
    tool schemas must be self-contained and finite.
    """
    if isinstance(schema, list):
        return [resolve(item, components, _seen) for item in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str):
        prefix = "#/components/schemas/"
        if not ref.startswith(prefix) or ref[len(prefix) :] not in components:
            raise McpConfigError(f"unresolvable schema reference {ref!r}")
        key = ref[len(prefix) :]
        if key in _seen:
            return {}
        target = resolve(components[key], components, _seen | {key})
        siblings = {k: resolve(v, components, _seen) for k, v in schema.items() if k != "$ref"}
        return {**target, **siblings}
    return {key: resolve(value, components, _seen) for key, value in schema.items()}


def simplify(schema: Any, *, parameter: bool = False) -> Any:
    """Flatten what the generator emits for optional fields, recursively.

    ``{"oneOf": [X]}`` becomes X, keeping sibling keys such as ``maxLength``.
    ``{"oneOf": [X, {"type": "null"}]}`` for a scalar X becomes X for a parameter
    (omitting it and passing null mean the same) and ``type: [X, "null"]`` in a
    body. Titles are dropped: they repeat the name.
    """
    if isinstance(schema, list):
        return [simplify(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: simplify(value) for key, value in schema.items() if key != "title"}
    options = out.get("oneOf")
    if isinstance(options, list):
        non_null = [o for o in options if o != {"type": "null"}]
        single = non_null[0] if len(non_null) == 1 and isinstance(non_null[0], dict) else None
        if single is not None and (len(options) == 1 or _is_scalar(single)):
            del out["oneOf"]
            merged = {**single, **out}
            if len(options) > 1 and not parameter:
                merged["type"] = [single["type"], "null"]
            return merged
    return out


def _is_scalar(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") in ("string", "integer", "number", "boolean")
