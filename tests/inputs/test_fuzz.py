"""Our own generators over every operation: hostile identifiers and JSON bodies, no 5xx.

Schemathesis (``tests/test_schemathesis.py``) generates from the OpenAPI
document, so it stays inside the shapes the document describes. These
generators aim at what the review found outside them: identifiers with a
trailing newline or a control character, ``~`` paths, numbers past int4 and
int8, over-long and percent-encoded names, page tokens and filters in every
query slot, and bodies whose fields hold values of the wrong type, nested
close to (and past) the depth bound, or carry megabytes where a word is
expected.

Every operation of the document is driven (path parameters aimed at real
resources half of the time, so handlers behind the lookups run), signed in
as the instance admin and as a restricted key. The only assertion is the
one that matters: no response is a 5xx, and every 4xx is the error shape.

Bounded for CI (``DAYBOOK_INPUT_FUZZ=<n>`` examples per operation, 6 by
default); the long run is ``DAYBOOK_INPUT_FUZZ=200 pytest -m slow
tests/inputs/test_fuzz.py`` (``bench/README.md``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, example, given, seed
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tests.test_schemathesis import Instance

pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")

EXAMPLES = int(os.environ.get("DAYBOOK_INPUT_FUZZ", "6"))

EDGE_IDS = [
    "",
    "0",
    "-1",
    "1",
    "2147483647",
    "2147483648",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "1e9",
    "0x10",
    "~",
    "~\n",
    "~.x\n",
    "home.1.x\n",
    "share\n",
    "share..x",
    "share.x.",
    ".",
    "..",
    "/",
    "alice\n",
    "alice\r\n",
    "users/alice\n",
    "users/",
    "memos/",
    "memos/x/y",
    "spaces/x\n",
    "spaces/x/groups/2147483648",
    "spaces/x/grants/-1",
    "a" * 37,
    "a" * 300,
    "a" * 5000,
    "é",
    "\u2028",
    "\x7f",
    "\ufeffabc",
    "%0A",
    "%00",
    "null",
    "true",
    "[]",
    "{}",
]
SUFFIXES = ["", "\n", "\r", "\t", " ", "\x0b", "\x1f", "/", "%0A", ".", "-", "\u0085"]
HOSTILE_ALPHABET = st.characters(
    blacklist_categories=["Cs"], blacklist_characters=["\x00"], max_codepoint=0x10FFFF
)

identifiers = st.one_of(
    st.sampled_from(EDGE_IDS),
    st.tuples(
        st.from_regex(r"[a-zA-Z0-9][a-zA-Z0-9._-]{0,40}", fullmatch=True), st.sampled_from(SUFFIXES)
    ).map("".join),
    st.text(HOSTILE_ALPHABET, max_size=40),
)
numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**31 - 1, 2**31, 2**63 - 1, 2**63, -(2**63) - 1, 0, -1]),
)
filters = st.one_of(
    st.sampled_from(
        [
            "creator_id in [2147483648]",
            "size(content) in [9223372036854775807]",
            "created_ts > 9223372036854775807",
            "tag in [" + ", ".join(['"a"'] * 200) + "]",
            "(" * 80 + "true" + ")" * 80,
            "!" * 200 + "true",
            'content.matches("(a+)+$")',
            'tree.startsWith("home.1.x\\n")',
            'creator == "users/alice\\n"',
        ]
    ),
    st.text(HOSTILE_ALPHABET, max_size=60),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    numbers,
    st.floats(allow_nan=False, allow_infinity=False),
    identifiers,
    st.text(HOSTILE_ALPHABET, max_size=80),
    st.sampled_from(["x" * 70_000, "#a/" * 3000, "![" * 3000]),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


def deep(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


def typed(
    document: dict[str, Any], schema: dict[str, Any], depth: int = 0
) -> st.SearchStrategy[Any]:
    """Values of the type the document declares, hostile in content (an id with a newline,
    an int past int8, a string at its maximum): past msgspec and into the handlers."""
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    options = schema.get("oneOf") or schema.get("anyOf") or [schema]
    strategies: list[st.SearchStrategy[Any]] = []
    for option in options:
        while "$ref" in option:
            option = document["components"]["schemas"][option["$ref"].rsplit("/", 1)[1]]
        kind = option.get("type")
        limit = int(schema.get("maxLength", option.get("maxLength", 10_000)))
        if kind == "string":
            choices = st.one_of(identifiers, filters, st.text(HOSTILE_ALPHABET, max_size=30))
            strategies.append(
                st.one_of(choices, st.sampled_from(["x" * limit, "#a/" * (limit // 3)])).map(
                    lambda v, n=limit: v[:n]
                )
            )
        elif kind == "integer":
            strategies.append(numbers)
        elif kind == "number":
            strategies.append(st.floats(allow_nan=False, allow_infinity=False))
        elif kind == "boolean":
            strategies.append(st.booleans())
        elif kind == "null":
            strategies.append(st.none())
        elif kind == "array" and depth < 3:
            items = typed(document, option.get("items", {}), depth + 1)
            strategies.append(st.lists(items, max_size=min(4, int(option.get("maxItems", 4)))))
        elif kind == "object" and depth < 3 and option.get("properties"):
            props = {k: typed(document, v, depth + 1) for k, v in option["properties"].items()}
            strategies.append(st.fixed_dictionaries({}, optional=props))
    return st.one_of(*strategies) if strategies else json_values


@st.composite
def bodies(draw: st.DrawFn, document: dict[str, Any], schema: dict[str, Any] | None) -> Any:
    """A body for an operation: well-typed and hostile mostly, any JSON sometimes."""
    fields = sorted((schema or {}).get("properties", {}))
    shape = draw(st.integers(0, 9))
    if shape == 0 or schema is None:
        return draw(json_values)  # not even an object
    if shape >= 4:
        return draw(typed(document, schema))
    body: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(fields or ["x"]), max_size=6, unique=True)):
        body[name] = draw(json_values)
    for _ in range(draw(st.integers(0, 2))):
        body[draw(st.text(max_size=10))] = draw(json_values)
    if shape == 1 and fields:
        body[draw(st.sampled_from(fields))] = deep(draw(scalars), draw(st.integers(55, 70)))
    return body


def _operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in sorted(document["paths"].items()):
        for method, operation in sorted(item.items()):
            if operation.get("operationId") in ("AuthService_SignOut", "AuthService_RefreshToken"):
                continue  # would end (refresh: replace) the credential this run uses
            yield method.upper(), path, operation


def _body_schema(document: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any] | None:
    content = operation.get("requestBody", {}).get("content", {})
    schema = content.get("application/json", {}).get("schema")
    if schema is None:
        return None
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return dict(schema)


def _params(operation: dict[str, Any], where: str) -> list[str]:
    return [p["name"] for p in operation.get("parameters", []) if p.get("in") == where]


def _real_values(instance: Instance, params: list[str]) -> dict[str, str]:
    """Existing resources for the path parameters a real request would name."""

    def last(name: str | None) -> str | None:
        return name.rsplit("/", 1)[1] if name else None

    makers = {
        "memo": lambda: last(instance.memos[0]),
        "user": lambda: "alice",
        "username": lambda: "alice",
        "setting": lambda: "ACCESS",
        "space": lambda: last(instance.real("space", False)),
        "share": lambda: last(instance.real("share", False)),
        "token": lambda: last(instance.real("share", False)),
        "reaction": lambda: last(instance.real("reaction", False)),
        "attachment": lambda: last(instance.real("attachment", False)),
        "uid": lambda: last(instance.real("attachment", False)),
        "filename": lambda: "fuzz.txt",
        "view_id": lambda: last(instance.real("view", False)),
        "token_id": lambda: last(instance.real("token", False)),
    }
    out = {}
    for param in params:
        value = makers[param]() if param in makers else None
        if value is not None:
            out[param] = value
    return out


def _fuzz_operation(
    instance: Instance,
    document: dict[str, Any],
    method: str,
    path: str,
    operation: dict[str, Any],
    headers: dict[str, str],
) -> list[str]:
    path_params = [p for p in _params(operation, "path")]
    query_params = _params(operation, "query")
    schema = _body_schema(document, operation)
    failures: list[str] = []

    query_values = st.one_of(identifiers, filters, numbers.map(str))

    @seed(hash((method, path)) & 0xFFFFFFFF)
    @hsettings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        path_values=st.fixed_dictionaries({p: identifiers for p in path_params}),
        real=st.booleans(),
        query=st.dictionaries(st.sampled_from(query_params or ["x"]), query_values, max_size=3),
        body=bodies(document, schema) if schema is not None else st.none(),
    )
    def run(path_values: dict[str, str], real: bool, query: dict[str, str], body: Any) -> None:
        values = dict(path_values)
        if real:
            values.update(_real_values(instance, path_params))
        url = path
        for name, value in values.items():
            url = url.replace("{" + name + "}", quote(str(value), safe=""))
        kwargs: dict[str, Any] = {"params": query, "headers": headers}
        if schema is not None:
            kwargs["data"] = json.dumps(body, ensure_ascii=True).encode()
            kwargs["headers"] = {**headers, "Content-Type": "application/json"}
        r = instance.request(method, url, **kwargs)
        if r.status_code >= 500 and len(failures) < 2:
            failures.append(
                f"{method} {url} {query} {str(body)[:200]!r}: {r.status_code} {r.text[:200]}"
            )
        if 400 <= r.status_code < 500 and not path.startswith("/file/"):
            payload = r.json()
            assert isinstance(payload.get("code"), int) and payload.get("message"), r.text[:200]

    run()
    return failures


def _fuzz_all(instance: Instance, headers: dict[str, str]) -> None:
    document = instance.request("GET", "/api/v1/openapi.json").json()
    failures: list[str] = []
    count = 0
    for method, path, operation in _operations(document):
        failures.extend(_fuzz_operation(instance, document, method, path, operation, headers))
        count += 1
    assert count >= 50, count
    assert not failures, "\n".join(failures)


def test_hostile_inputs_signed_in(instance: Instance, dialect: str) -> None:
    token = instance.setup_admin()
    _fuzz_all(instance, {"Authorization": f"Bearer {token}"})
    r = instance.request("GET", "/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.text  # the run never broke its own credential


def test_hostile_inputs_with_a_restricted_key(instance: Instance, dialect: str) -> None:
    token = instance.setup_admin()
    space = instance.real("space", False)
    restriction = {
        "scope": "WRITE",
        "personal": "OWN",
        "spaces": [{"space": space, "trees": [{"path": "share", "level": "WRITE"}]}],
    }
    r = instance.request(
        "POST",
        "/api/v1/users/alice/personalAccessTokens",
        json={"description": "fuzz", "restriction": restriction},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert r.status_code == 200, r.text
    _fuzz_all(instance, {"Authorization": f"Bearer {r.json()['token']}"})


@pytest.mark.slow
def test_hostile_inputs_anonymous(instance: Instance, dialect: str) -> None:
    instance.setup_admin()
    _fuzz_all(instance, {})


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_hostile_mcp_calls(instance: Instance, dialect: str) -> None:
    """JSON-RPC envelopes and tool arguments of any shape: a JSON-RPC answer, never a 5xx."""
    token = instance.setup_admin()
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    listed = instance.request(
        "POST",
        "/mcp",
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
        headers=headers,
    )
    assert listed.status_code == 200, listed.text[:200]
    names = [tool["name"] for tool in listed.json()["result"]["tools"]]
    failures: list[str] = []

    @hsettings(
        max_examples=EXAMPLES * 20,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        name=st.one_of(st.sampled_from(names), identifiers),
        arguments=st.one_of(
            st.dictionaries(
                st.sampled_from(["memo", "name", "filter", "content", "space"]),
                json_values,
                max_size=4,
            ),
            json_values,
        ),
        shape=st.integers(0, 4),
        method=st.sampled_from(["tools/call", "tools/list", "initialize", "x", ""]),
    )
    def run(name: str, arguments: Any, shape: int, method: str) -> None:
        call: Any = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        if shape == 1:
            call = {**call, "method": method, "params": arguments}
        elif shape == 2:
            call = [call, call]
        elif shape == 3:
            call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": name}}
        elif shape == 4:
            call["params"]["arguments"] = deep(arguments, 70)
        r = instance.request("POST", "/mcp", data=json.dumps(call).encode(), headers=headers)
        if r.status_code >= 500 and len(failures) < 3:
            failures.append(f"{str(call)[:300]!r}: {r.status_code} {r.text[:200]}")

    run()
    assert not failures, "\n".join(failures)


def test_hostile_restrictions(instance: Instance, dialect: str) -> None:
    """A key's restriction is free-form JSON: every shape of it is a 200 or a 400.

    (``{"level": []}`` inside a tree was a 500: an unhashable dict key.)
    """
    token = instance.setup_admin()
    headers = {"Authorization": f"Bearer {token}"}
    space = instance.real("space", False)
    # Containers where a string is expected: unhashable, so a set or dict lookup raises.
    odd = st.one_of(st.sampled_from([[], {}, ["READ"], {"READ": 1}, None, 1, 1.5]), json_values)

    def mostly(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        """Valid four times in five, so the checks after this one are reached too."""
        return st.one_of(valid, valid, valid, valid, odd)

    names = st.one_of(st.just(space), st.just(space), identifiers, odd)
    trees = st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "path": mostly(st.sampled_from(["share", "~", "", "home.1.x\n"])),
                "level": st.one_of(st.sampled_from(["READ", "WRITE", "OWNER"]), odd),
            },
        ),
        max_size=3,
    )
    declarations = st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "space": names,
                "admin": st.one_of(st.booleans(), json_values),
                "trees": trees,
            },
        ),
        max_size=3,
    )
    restrictions = st.fixed_dictionaries(
        {},
        optional={
            "scope": mostly(st.sampled_from(["READ", "WRITE"])),
            "personal": mostly(st.sampled_from(["NONE", "OWN", "AUDIENCE"])),
            "spaces": mostly(declarations),
        },
    )
    failures: list[str] = []

    @hsettings(
        max_examples=EXAMPLES * 25,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(restriction=st.one_of(restrictions, restrictions, restrictions, json_values))
    @example(restriction={"spaces": [{"space": space, "trees": [{"path": "share", "level": []}]}]})
    @example(restriction={"spaces": [{"space": space, "trees": [{"path": "", "level": {}}]}]})
    @example(restriction={"scope": [], "personal": {}, "spaces": [{"space": {}}]})
    def run(restriction: Any) -> None:
        r = instance.request(
            "POST",
            "/api/v1/users/alice/personalAccessTokens",
            data=json.dumps({"description": "k", "restriction": restriction}).encode(),
            headers={**headers, "Content-Type": "application/json"},
        )
        if r.status_code >= 500 and len(failures) < 3:
            failures.append(f"{restriction!r}: {r.status_code} {r.text[:200]}")

    run()
    assert not failures, "\n".join(failures)
