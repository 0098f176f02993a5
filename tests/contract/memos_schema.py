"""Memos' OpenAPI 3.0 document as a JSON Schema validator, plus the "always written" rule.

The document (``memos-openapi-76a7629.yaml``, MIT, see README.md here) uses the
OpenAPI 3.0 schema dialect, a superset of JSON Schema draft 4 with a few
keywords of its own (``nullable``, ``readOnly``, ``format``). None of the
schemas Daybook is checked against use ``nullable``, so draft 4 with the
document registered as one resource resolves every ``$ref`` as OpenAPI does.
Formats are checked strictly: ``date-time`` must be RFC 3339 and ``int64``
strings must be decimal integers, as protobuf's JSON mapping writes them.

Memos' gateway marshals with ``EmitDefaultValues``: every scalar, enum, list
and map field is written even when it holds its default, while unset message
fields (timestamps included) and proto3 ``optional`` fields are omitted.
``missing_defaults`` applies that rule recursively, so a response that passes
both checks is one a strict Memos client reads without surprise.
"""

from __future__ import annotations

import pathlib
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

import jsonschema
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

HERE = pathlib.Path(__file__).parent
DOCUMENT = HERE / "memos-openapi-76a7629.yaml"
URI = "urn:memos-openapi-76a7629"
METHODS = ("get", "post", "put", "patch", "delete")

# Fields that are proto3 ``optional`` (or inside a ``oneof``) although their
# OpenAPI type is a scalar: the gateway omits them when unset.
OPTIONAL_SCALARS: dict[str, set[str]] = {
    "Attachment": {"memo", "content"},  # content: bytes, never sent back by Memos either
    "Memo": {"parent"},
    "PhotoMetadata": {"width", "height"},
    "MediaMetadata": {"sourceExifOrientation"},
    "User": {"password"},  # input only: Memos never writes it
}
# Formats whose proto type is a message (google.protobuf.Timestamp, FieldMask,
# Duration): unset means absent, not "".
MESSAGE_FORMATS = {"date-time", "field-mask", "duration"}

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})\Z")
_INT64 = re.compile(r"-?\d{1,19}\Z")


@cache
def document() -> dict[str, Any]:
    with DOCUMENT.open(encoding="utf-8") as fh:
        loaded: dict[str, Any] = yaml.safe_load(fh)
    return loaded


def operations() -> dict[str, tuple[str, str, dict[str, Any]]]:
    """operationId → (METHOD, path, operation object)."""
    out = {}
    for path, item in document()["paths"].items():
        for method in METHODS:
            if method in item:
                op = item[method]
                out[op["operationId"]] = (method.upper(), path, op)
    return out


def response_schema(operation_id: str) -> str | None:
    """Name of the 200 response's schema; None for google.protobuf.Empty."""
    op = operations()[operation_id][2]
    content = op["responses"]["200"].get("content", {})
    schema = content.get("application/json", {}).get("schema")
    if schema is None:
        return None
    ref: str = schema["$ref"]
    return ref.rsplit("/", 1)[1]


_formats = jsonschema.FormatChecker(formats=())


@_formats.checks("date-time")
def _is_datetime(value: object) -> bool:
    return not isinstance(value, str) or bool(_RFC3339.match(value))


@_formats.checks("int64")
@_formats.checks("uint64")
def _is_int64(value: object) -> bool:
    return not isinstance(value, str) or bool(_INT64.match(value))


@cache
def _registry() -> Registry[Any]:
    resource: Resource[Any] = Resource.from_contents(document(), default_specification=DRAFT4)
    return Registry().with_resource(URI, resource)


def validator(schema_name: str) -> jsonschema.Draft4Validator:
    return jsonschema.Draft4Validator(
        {"$ref": f"{URI}#/components/schemas/{schema_name}"},
        registry=_registry(),
        format_checker=_formats,
    )


def schema_errors(instance: Any, schema_name: str) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
        for e in validator(schema_name).iter_errors(instance)
    ]


def _named(schema: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """Follow a ``$ref`` or a single-``allOf`` wrapper to the named schema."""
    if "allOf" in schema and len(schema["allOf"]) == 1:
        schema = schema["allOf"][0]
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return name, document()["components"]["schemas"][name]
    return None, schema


def _always_written(prop: dict[str, Any]) -> bool:
    name, target = _named(prop)
    if name is not None:
        return False  # a message: omitted when unset
    kind = target.get("type")
    if kind == "string" and target.get("format") in MESSAGE_FORMATS:
        return False
    return kind in ("string", "integer", "number", "boolean", "array") or (
        kind == "object" and "additionalProperties" in target  # a map
    )


def missing_defaults(instance: Any, schema_name: str) -> list[str]:
    """Paths of fields Memos always writes that ``instance`` lacks."""
    schema = document()["components"]["schemas"][schema_name]
    return list(_walk(instance, schema_name, schema, ""))


def _walk(value: Any, name: str | None, schema: dict[str, Any], at: str) -> Iterator[str]:
    if isinstance(value, list):
        items = schema.get("items")
        if items is not None:
            item_name, item_schema = _named(items)
            for i, item in enumerate(value):
                yield from _walk(item, item_name, item_schema, f"{at}[{i}]")
        return
    if not isinstance(value, dict):
        return
    if "additionalProperties" in schema and "properties" not in schema:
        inner_name, inner = _named(schema["additionalProperties"])
        for key, item in value.items():
            yield from _walk(item, inner_name, inner, f"{at}.{key}")
        return
    skip = OPTIONAL_SCALARS.get(name or "", set())
    for key, prop in schema.get("properties", {}).items():
        if key not in value:
            if key not in skip and _always_written(prop):
                yield f"{at}.{key}" if at else key
            continue
        prop_name, prop_schema = _named(prop)
        yield from _walk(value[key], prop_name, prop_schema, f"{at}.{key}" if at else key)
