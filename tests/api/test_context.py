"""The provided request context and the read-only-key guard (``app.api.context``).

The guard is a coroutine function (Litestar would run a plain one on a worker
thread), so it is tested as one: a READ key is refused,
a WRITE key, a session and an anonymous request (left to ``requires_user``)
pass. ``tests/grants/test_read_key.py`` drives every write endpoint with a
READ key end to end.
"""

from __future__ import annotations

import ast
import asyncio
import pathlib
from types import SimpleNamespace
from typing import Any

import pytest

from app.access.caller import Caller, Credential
from app.access.restriction import Restriction
from app.api.context import writable_key
from app.errors import PermissionDenied


def _conn(user: Caller | None) -> Any:
    return SimpleNamespace(scope={"user": user})


def _guard(user: Caller | None) -> None:
    asyncio.run(writable_key(_conn(user), None))  # type: ignore[arg-type]


def _key(scope: str) -> Caller:
    return Caller(
        user_id=7,
        username="agent",
        role="USER",
        credential=Credential.PAT,
        pat_id=3,
        restriction=Restriction.parse({"scope": scope, "personal": "OWN"}),
    )


def test_read_key_refused_on_mutating_route() -> None:
    with pytest.raises(PermissionDenied, match="read-only"):
        _guard(_key("READ"))


def test_malformed_scope_is_read_only() -> None:
    with pytest.raises(PermissionDenied):
        _guard(_key("ADMIN"))


@pytest.mark.parametrize(
    "user",
    [
        None,
        Caller(user_id=1, username="alice", role="USER", credential=Credential.SESSION),
    ],
    ids=["anonymous", "session"],
)
def test_writers_and_anonymous_pass(user: Caller | None) -> None:
    _guard(user)
    _guard(_key("WRITE"))


# The handlers take ``ctx`` and leave SQL to services (issue 14, decision 0033).
# Exceptions, each for a reason: space handlers take ``db`` beside their
# ``space_ctx``; the archive export/import run on the engine, outside any
# request transaction (ctx would open one), and link previews fetch from the
# network holding no connection at all.
_SINGLE_VALUES = {"db", "caller", "access", "settings", "now"}
_TAKES_SINGLE_VALUES = {
    ("app/portability/routes.py", "export_memos"),
    ("app/portability/routes.py", "import_memos"),
}
_ROOT = pathlib.Path(__file__).resolve().parents[2]


def _route_modules() -> list[pathlib.Path]:
    return sorted((_ROOT / "app").rglob("*routes*.py"))


def _handlers(path: pathlib.Path) -> list[ast.AsyncFunctionDef | ast.FunctionDef]:
    tree = ast.parse(path.read_text())
    return [
        f
        for cls in tree.body
        if isinstance(cls, ast.ClassDef)
        for f in cls.body
        if isinstance(f, ast.AsyncFunctionDef | ast.FunctionDef) and f.decorator_list
    ]


def test_no_handler_declares_the_single_values_ctx_bundles() -> None:
    found = []
    for path in _route_modules():
        rel = path.relative_to(_ROOT).as_posix()
        for f in _handlers(path):
            names = {a.arg for a in f.args.args + f.args.kwonlyargs}
            many = names & _SINGLE_VALUES
            if rel.startswith("app/spaces/"):
                many -= {"db"}
            # ``settings`` alone is what a handler with no transaction takes.
            if many - {"settings"} and (rel, f.name) not in _TAKES_SINGLE_VALUES:
                found.append(f"{rel}::{f.name} {sorted(many)}")
    assert found == []


def test_no_route_module_runs_sql() -> None:
    found = []
    for path in _route_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                mods = [node.module or ""]
            else:
                continue
            for mod in mods:
                if mod in ("sqlalchemy", "app.db.schema") or mod.startswith("sqlalchemy.sql"):
                    found.append(f"{path.relative_to(_ROOT)}: {mod}")
    assert found == []
