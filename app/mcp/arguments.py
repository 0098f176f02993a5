"""Tool arguments → one REST request, refused with a friendly message when invalid.

Validation runs against the tool's own input schema before anything is sent,
so a route never sees arguments the schema rejects. Messages name the
argument the way a model wrote it: ``unknown argument "x"``, ``missing
required argument "body.memos"``, ``argument "pageSize" must be integer``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import (  # type: ignore[import-untyped]
    ValidationError,
    best_match,
)

from app.mcp.tools import BODY, ToolSpec

__all__ = ["ArgumentError", "Call", "ToolArguments"]


class ArgumentError(ValueError):
    """The arguments do not fit the tool: answered to the model, never sent to a route."""


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    path: str
    query_string: bytes
    body: bytes | None


class ToolArguments:
    """A tool's compiled validator and its request builder."""

    def __init__(self, spec: ToolSpec) -> None:
        self.spec = spec
        Draft202012Validator.check_schema(spec.input_schema)
        self._validator = Draft202012Validator(spec.input_schema)

    def to_call(self, arguments: Mapping[str, Any] | None) -> Call:
        """Validate and build the request, or raise ``ArgumentError``."""
        spec = self.spec
        args = {k: v for k, v in (arguments or {}).items() if not (v is None and k != BODY)}
        for name in spec.path_params:
            value = args.get(name)
            if isinstance(value, str) and "/" in value:
                args[name] = value.rstrip("/").rsplit("/", 1)[-1]  # memos/abc → abc
        error = best_match(self._validator.iter_errors(args))
        if error is not None:
            raise ArgumentError(_message(error))
        path = spec.path
        for name in spec.path_params:
            value = str(args[name])
            if value in ("", ".", ".."):
                raise ArgumentError(f'argument "{name}" must be an id or a resource name')
            path = path.replace("{" + name + "}", quote(value, safe=""))
        query = [(name, _query_value(args[name])) for name in spec.query_params if name in args]
        body = None
        if spec.has_body:
            body = json.dumps(args.get(BODY, {}), separators=(",", ":")).encode()
        return Call(spec.method, path, urlencode(query).encode("ascii"), body)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _where(error: ValidationError) -> str:
    return ".".join(str(part) for part in error.absolute_path)


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _message(error: ValidationError) -> str:
    where = _where(error)
    schema = error.schema if isinstance(error.schema, dict) else {}
    instance = error.instance
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        known = set(schema.get("properties", {}))
        extra = sorted(key for key in instance if key not in known)
        if extra:
            return f'unknown argument "{_join(where, extra[0])}"'
    if error.validator == "required" and isinstance(instance, dict):
        missing = [key for key in error.validator_value if key not in instance]
        if missing:
            return f'missing required argument "{_join(where, missing[0])}"'
    label = where or "arguments"
    if error.validator == "type":
        expected = error.validator_value
        if isinstance(expected, list):
            expected = " or ".join(t for t in expected if t != "null")
        return f'argument "{label}" must be {_article(str(expected))}'
    if error.validator == "enum":
        options = ", ".join(str(v) for v in error.validator_value)
        return f'argument "{label}" must be one of {options}'
    return f'argument "{label}": {error.message}'


def _article(kind: str) -> str:
    return {"object": "an object", "array": "an array"}.get(kind, kind)
