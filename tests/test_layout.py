"""The README's architecture table names every top-level entry of ``app/``.

A layout table that drifts from the tree misleads the newcomer it was written
for (datasette's ``tests/test_docs.py`` does the same for settings and hooks).
"""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _table() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Architecture")
    return text[start : text.index("\n## ", start + 1)]


def test_every_top_level_app_entry_is_in_the_architecture_table() -> None:
    named = set(re.findall(r"`(app/[^`/]+/?)`", _table()))
    entries = {
        f"app/{p.name}/" if p.is_dir() else f"app/{p.name}"
        for p in (ROOT / "app").iterdir()
        if not p.name.startswith(("_", ".")) and (p.is_dir() or p.suffix == ".py")
    }
    assert sorted(entries - named) == []


def test_the_table_names_nothing_that_is_gone() -> None:
    paths = set(re.findall(r"`((?:app|tests|bench|migrations|web|docs)/[^` ]*)`", _table()))
    missing = sorted(p for p in paths if not (ROOT / p.rstrip("/")).exists())
    assert missing == []


def test_every_app_package_is_in_the_test_map() -> None:
    """``tests/README.md`` maps each ``app/`` package to its tests, and names no lost path."""
    text = (ROOT / "tests" / "README.md").read_text()
    named = set(re.findall(r"`(app/[^`/]+/)`", text))
    packages = {
        f"app/{p.name}/"
        for p in (ROOT / "app").iterdir()
        if p.is_dir() and (p / "__init__.py").exists()
    }
    assert sorted(packages - named) == []
    paths = set(re.findall(r"`((?:app|tests|web)/[^`<> *]*)`", text))
    assert sorted(p for p in paths if not (ROOT / p.rstrip("/")).exists()) == []
