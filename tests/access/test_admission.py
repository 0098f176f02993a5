"""Admission is the only way a read asks for readable memos (issue 13 items 1, 2).

A source scan, like ``tests/inputs/test_patterns.py``: no module of ``app/``
other than the read rule itself (``app/access/audience.py``), its one thin
layer (``app/access/admission.py``) and the package's re-export
(``app/access/__init__.py``) names ``audience_predicate``. A path that wrote
its own wrapper around the predicate (top-level or comments, state, the
archive rule, the filter) would bypass the shared mechanism; it must ask
``app.access.admission`` instead.

Also the admission's own shape: the conditions each kind of read gets.
"""

from __future__ import annotations

import ast
import pathlib

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from app.access.admission import Admission, Kind, conditions, readable
from app.access.audience import AccessMode, audience_predicate
from app.access.caller import Caller, Credential
from app.db.schema import memo

APP = pathlib.Path(__file__).resolve().parents[2] / "app"
ALLOWED = {"access/audience.py", "access/admission.py", "access/__init__.py"}
RAW = "audience_predicate"

ALICE = Caller(user_id=1, username="alice", role="USER", credential=Credential.SESSION)


def _uses(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        named = (
            (isinstance(node, ast.Name) and node.id == RAW)
            or (isinstance(node, ast.Attribute) and node.attr == RAW)
            or (isinstance(node, ast.ImportFrom) and any(a.name == RAW for a in node.names))
        )
        if named:
            lines.append(node.lineno)
    return lines


def test_only_admission_uses_the_raw_predicate() -> None:
    bad = []
    for path in sorted(APP.rglob("*.py")):
        rel = path.relative_to(APP).as_posix()
        if rel in ALLOWED:
            continue
        bad += [f"{rel}:{line}" for line in _uses(ast.parse(path.read_text(), str(path)))]
    assert not bad, f"use app.access.admission, not {RAW}: {bad}"


def test_the_scan_sees_a_use() -> None:
    """Positive control: the scan finds the name in every form it can take."""
    source = (
        "from app.access.audience import audience_predicate\n"
        "import app.access.audience as a\n"
        "x = a.audience_predicate(None, mode)\n"
    )
    assert _uses(ast.parse(source)) == [1, 3]


def _sql(*where: sa.ColumnElement[bool]) -> str:
    stmt = sa.select(memo.c.id).where(*where)
    return str(stmt.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))


def test_top_level_normal_is_the_list() -> None:
    got = conditions(Admission(ALICE, AccessMode.PRIVATE))
    assert [str(c.compile(compile_kwargs={"literal_binds": True})) for c in got[:2]] == [
        "memo.parent_id IS NULL",
        "memo.state = 'NORMAL'",
    ]
    assert got[2] is audience_predicate(ALICE, AccessMode.PRIVATE)
    assert len(got) == 3


def test_comments_of_one_memo() -> None:
    sql = _sql(*conditions(Admission(ALICE, AccessMode.PRIVATE, Kind.COMMENTS, parent_id=7)))
    assert "memo.parent_id = 7" in sql and "parent_id IS NULL" not in sql
    with pytest.raises(ValueError):
        Admission(ALICE, AccessMode.PRIVATE, Kind.COMMENTS)
    with pytest.raises(ValueError):
        Admission(ALICE, AccessMode.PRIVATE, parent_id=7)


def test_the_archive_is_the_readers_own() -> None:
    sql = _sql(*conditions(Admission(ALICE, AccessMode.PRIVATE, state="ARCHIVED")))
    assert "memo.state = 'ARCHIVED'" in sql and "memo.creator_id = 1" in sql
    anonymous = _sql(*conditions(Admission(None, AccessMode.PUBLIC, state="ARCHIVED")))
    assert "memo.creator_id = -1" in anonymous


def test_any_state_and_kind_for_export() -> None:
    got = conditions(Admission(ALICE, AccessMode.PRIVATE, Kind.ANY, state=None, creator_id=1))
    sql = _sql(*got)
    assert "parent_id" not in sql.split("WHERE", 1)[1].split("EXISTS", 1)[0]
    assert got[0] is audience_predicate(ALICE, AccessMode.PRIVATE)
    assert "memo.creator_id = 1" in sql


def test_a_filter_only_narrows_and_needs_the_memo_table() -> None:
    narrow = memo.c.pinned.is_(True)
    got = conditions(Admission(ALICE, AccessMode.PRIVATE, filter=narrow))
    assert len(got) == 4 and "memo.pinned IS true" in _sql(got[-1])
    with pytest.raises(ValueError):
        conditions(Admission(ALICE, AccessMode.PRIVATE, filter=narrow), memo.alias("m"))


def test_readable_is_the_rule_on_any_alias() -> None:
    other = memo.alias("other")
    assert readable(ALICE, AccessMode.PRIVATE, other) is audience_predicate(
        ALICE, AccessMode.PRIVATE, other
    )
