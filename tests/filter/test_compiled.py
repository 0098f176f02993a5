"""The filter's one compile step (``app.filter.compiled``) and the layering around it.

A list compiles its filter once and keeps the ``CompiledFilter``: its needles
and its rendering come from the same lowered IR, so the text is never lowered
a second time on the way to SQL.
"""

from __future__ import annotations

import ast
import pathlib

import pytest
from sqlalchemy.dialects import postgresql, sqlite

from app.filter import FilterError, compile_filter
from app.filter import compiled as compiled_module

APP = pathlib.Path(__file__).resolve().parents[2] / "app"


def _sql(clause: object, dialect: object) -> str:
    return str(clause.compile(dialect=dialect))  # type: ignore[attr-defined]


def test_one_compile_exposes_needles_and_renders_per_dialect() -> None:
    compiled = compile_filter('"daily" in tags && content.contains("standup")')
    assert [type(n).__name__ for n in compiled.needles] == ["TagNeedle", "TrigramNeedle"]
    lite = _sql(compiled.render(dialect_name="sqlite", now=0), sqlite.dialect())
    pg = _sql(compiled.render(dialect_name="postgresql", now=0), postgresql.dialect())
    assert "memo_trgm" in lite and "memo_trgm" not in pg
    dense = compiled.render(dialect_name="sqlite", now=0, dense=frozenset(compiled.needles))
    assert "EXISTS" in _sql(dense, sqlite.dialect()) and "EXISTS" not in lite


def test_render_does_not_lower_again(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = compile_filter("pinned && created_ts > now - 60")

    def lowering_again(*_: object) -> None:
        raise AssertionError("render lowered the text again")

    monkeypatch.setattr(compiled_module, "_lowered", lowering_again)
    monkeypatch.setattr(compiled_module, "parse", lowering_again)
    for dialect in ("sqlite", "postgresql"):
        compiled.render(dialect_name=dialect, now=1_700_000_000)
    assert compiled.needles == ()


def test_attachment_filters_have_no_needles_and_reject_memo_fields() -> None:
    assert compile_filter('mime_type == "image/png"', "attachment").needles == ()
    with pytest.raises(FilterError):
        compile_filter('content.contains("a")', "attachment")


def _imports(package: pathlib.Path) -> set[str]:
    found: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
    return found


def test_db_does_not_import_the_filter_compiler() -> None:
    """``app.filter`` renders over ``app.db.schema``; the reverse import would cycle.
    The one thing both need, case folding, lives in the neutral ``app.fold``."""
    compiler = sorted(m for m in _imports(APP / "db") if m.split(".")[:2] == ["app", "filter"])
    assert compiler == []
