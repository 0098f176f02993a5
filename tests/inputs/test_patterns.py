"""Every identifier pattern in ``app/`` is a full match (issue 13 item 11).

A source scan, so that a pattern added later cannot bring ``$`` back:

- ``re.compile`` patterns never end in ``$`` (it matches before a trailing
  newline: ``re.match(r"^a$", "a\\n")`` succeeds), and identifier patterns
  (``*_RE``) are used with ``fullmatch`` only;
- patterns that reach the OpenAPI document (``Meta(pattern=...)``,
  ``Parameter(pattern=...)``) are read as ECMA regexes by clients and as
  Python regexes by us; ``\\Z`` is not ECMA and ``$`` differs, so they must
  end in ``(?![\\s\\S])``, which means "end of input" in both dialects.
"""

from __future__ import annotations

import ast
import pathlib
import re

APP = pathlib.Path(__file__).resolve().parents[2] / "app"
PORTABLE_END = r"(?![\s\S])"


def _sources() -> list[tuple[pathlib.Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(), str(p))) for p in sorted(APP.rglob("*.py"))]


def _const(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def test_compiled_patterns_never_end_in_dollar() -> None:
    bad = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "compile"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
                and node.args
            ):
                pattern = _const(node.args[0])
                if pattern is not None and re.search(r"(?<!\\)\$\)*\Z", pattern):
                    bad.append(f"{path.relative_to(APP)}:{node.lineno}: {pattern!r}")
    assert not bad, bad


def test_identifier_patterns_are_used_with_fullmatch() -> None:
    bad = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("match", "search")
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id.endswith("_RE")
            ):
                bad.append(f"{path.relative_to(APP)}:{node.lineno}: {node.func.value.id}")
    assert not bad, bad


def test_schema_patterns_are_portable_full_matches() -> None:
    bad = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            for keyword in node.keywords:
                if keyword.arg != "pattern":
                    continue
                pattern = _const(keyword.value)
                if pattern is None or not (
                    pattern.startswith("^") and pattern.endswith(PORTABLE_END)
                ):
                    bad.append(f"{path.relative_to(APP)}:{node.lineno}: {pattern!r}")
    assert not bad, bad


def test_the_portable_end_means_end_of_input() -> None:
    pattern = re.compile("^[a-z]+" + PORTABLE_END)
    assert pattern.search("abc") and not pattern.search("abc\n")
    assert re.compile("^[a-z]+$").search("abc\n") is not None  # why "$" is refused
