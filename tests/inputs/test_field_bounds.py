"""Every string and list a request body carries has a bound (issue 13 item 15).

``location.placeholder`` had none (a memo could carry megabytes beside its
content limit), and neither did most titles, names and codes. Two checks:

- structural: every field of every request body (the ``In`` structs,
  nested ones included) is a bounded string or list, or is on the short list
  of exemptions below with the reason; a new unbounded field fails here;
- behavioural: for every operation of the OpenAPI document with a JSON body
  and every bounded string in it, one character over the bound is a 400
  naming the field, and exactly the bound is never a 5xx (so no bound
  exceeds the column that stores the value).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from litestar.testing import AsyncTestClient

import app
from app.api.structs import In
from tests.conftest import Actor

# Fields that are not bounded strings or lists, and why that is safe.
EXEMPT = {
    # base64, bounded by the instance's attachment size limit before decoding
    "CreateAttachmentBody.content",
    "AttachmentIn.content",
}


def _import_all() -> None:
    for module in pkgutil.walk_packages(app.__path__, "app."):
        importlib.import_module(module.name)


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _problems(owner: str, name: str, t: Any, seen: set[str]) -> Iterator[str]:
    where = f"{owner}.{name}"
    if isinstance(t, msgspec.inspect.UnionType):
        for member in t.types:
            yield from _problems(owner, name, member, seen)
    elif isinstance(t, msgspec.inspect.StrType):
        if t.max_length is None and where not in EXEMPT:
            yield f"{where}: a string without max_length"
    elif isinstance(t, msgspec.inspect.ListType | msgspec.inspect.DictType):
        if t.max_length is None:
            yield f"{where}: a collection without max_length"
        inner = t.item_type if isinstance(t, msgspec.inspect.ListType) else t.value_type
        yield from _problems(owner, f"{name}[]", inner, seen)
    elif isinstance(t, msgspec.inspect.StructType):
        yield from _struct_problems(t.cls, seen)


def _struct_problems(cls: type, seen: set[str]) -> Iterator[str]:
    if cls.__qualname__ in seen:
        return
    seen.add(cls.__qualname__)
    info = msgspec.inspect.type_info(cls)
    assert isinstance(info, msgspec.inspect.StructType)
    for field in info.fields:
        if isinstance(field.type, msgspec.inspect.AnyType):
            # Output-only fields Memos clients send back: accepted, never read.
            assert not field.required, f"{cls.__qualname__}.{field.name}: Any"
            continue
        yield from _problems(cls.__qualname__, field.name, field.type, seen)


def test_every_request_field_is_bounded() -> None:
    _import_all()
    bodies = sorted(set(_subclasses(In)), key=lambda c: c.__qualname__)
    assert len(bodies) >= 20, [c.__qualname__ for c in bodies]
    seen: set[str] = set()
    problems = [p for cls in bodies for p in _struct_problems(cls, seen)]
    assert not problems, "\n".join(problems)


def _body_schema(document: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any] | None:
    content = operation.get("requestBody", {}).get("content", {})
    schema = content.get("application/json", {}).get("schema")
    return _resolve(document, schema) if schema else None


def _resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        schema = document["components"]["schemas"][name]
    return schema


def _bounded_strings(document: dict[str, Any], schema: dict[str, Any]) -> Iterator[tuple[str, int]]:
    for name, prop in schema.get("properties", {}).items():
        options = [_resolve(document, o) for o in prop.get("oneOf", [prop])]
        bound = prop.get(
            "maxLength", next((o["maxLength"] for o in options if "maxLength" in o), None)
        )
        if bound is not None and any(o.get("type") == "string" for o in options):
            yield name, int(bound)


def _url(path: str) -> str:
    out = []
    for part in path.split("/"):
        if part.startswith("{"):
            out.append("1" if part[1:-1].endswith("_id") else "x")
        else:
            out.append(part)
    return "/".join(out)


async def test_one_over_every_bound_is_a_400(client: AsyncTestClient[Any], alice: Actor) -> None:
    document = (await client.get("/api/v1/openapi.json")).json()
    tried = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            schema = _body_schema(document, operation)
            if schema is None or operation["operationId"] == "AuthService_SignOut":
                continue
            for field, bound in _bounded_strings(document, schema):
                if bound > 100_000:
                    continue  # memo content: the content limit's own test
                r = await alice.request(method.upper(), _url(path), json={field: "a" * (bound + 1)})
                tried += 1
                assert r.status_code == 400, (operation["operationId"], field, r.text[:200])
                assert field in r.json()["message"], (operation["operationId"], field, r.text)
    assert tried >= 40


async def test_every_bound_fits_its_column(client: AsyncTestClient[Any], alice: Actor) -> None:
    """Exactly at the bound, on real resources: a 4xx from the service at most, never a 5xx."""
    space = (await alice.post("/api/v1/spaces", json={"title": "S"})).json()["name"]
    memo = await alice.memo("m")
    fill = {"space": space.split("/")[1], "memo": memo["name"].split("/")[1], "user": "alice"}
    document = (await client.get("/api/v1/openapi.json")).json()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            schema = _body_schema(document, operation)
            if schema is None or operation["operationId"] in ("AuthService_SignOut",):
                continue
            url = path
            for key, value in fill.items():
                url = url.replace("{" + key + "}", value)
            for field, bound in _bounded_strings(document, schema):
                if bound > 100_000:
                    continue
                r = await alice.request(method.upper(), _url(url), json={field: "é" * bound})
                assert r.status_code < 500, (operation["operationId"], field, r.text[:200])


@pytest.mark.parametrize(
    "location",
    [{"placeholder": "p" * 513}, {"placeholder": "p" * 10_000_000}],
)
async def test_location_placeholder_is_bounded(alice: Actor, location: dict[str, Any]) -> None:
    r = await alice.post("/api/v1/memos", json={"content": "x", "location": location})
    if len(location["placeholder"]) > 1024 * 1024:  # past the memo route's body limit (0018)
        assert r.status_code == 413, r.text[:200]
        assert "limit" in r.json()["message"]
    else:
        assert r.status_code == 400, r.text[:200]
        assert "placeholder" in r.json()["message"]
    r = await alice.post(
        "/api/v1/memos", json={"content": "x", "location": {"placeholder": "p" * 512}}
    )
    assert r.status_code == 200 and r.json()["location"]["placeholder"] == "p" * 512
