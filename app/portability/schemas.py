"""The vendored JSON Schemas (``schema/``) as validators, built once per process.

Memos' two schemas are normative for the records; ``jsonschema`` (Draft
2020-12) applies them exactly, so a record Memos would refuse is refused
here too. Messages name the JSON path of the failing member, bounded in
number so a hostile record cannot make the error body large.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker  # type: ignore[import-untyped]

SCHEMA_COMMIT = "ea4b2f1136dd5e08c79f8073cefacabe7346c622"
MAX_MESSAGES = 5

__all__ = ["SCHEMA_COMMIT", "extra_problems", "manifest_problems", "record_problems"]


@functools.cache
def _validator(name: str) -> Draft202012Validator:
    text = resources.files("app.portability").joinpath("schema", name).read_text("utf-8")
    schema = json.loads(text)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=FormatChecker())


def _problems(name: str, instance: Any) -> list[str]:
    out: list[str] = []
    errors = sorted(_validator(name).iter_errors(instance), key=lambda e: list(e.absolute_path))
    for error in errors[:MAX_MESSAGES]:
        where = "/".join(str(p) for p in error.absolute_path) or "(record)"
        message = error.message if len(error.message) <= 200 else error.message[:197] + "..."
        out.append(f"{where}: {message}")
    if len(errors) > MAX_MESSAGES:
        out.append(f"and {len(errors) - MAX_MESSAGES} more schema violations")
    return out


def manifest_problems(instance: Any) -> list[str]:
    return _problems("1.0/manifest.schema.json", instance)


def record_problems(instance: Any) -> list[str]:
    return _problems("1.0/memo.schema.json", instance)


def extra_problems(instance: Any) -> list[str]:
    return _problems("daybook-extra.schema.json", instance)
