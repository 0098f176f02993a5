"""Text to lark tree: cheap pre-checks, then cel-python's parser.

The pre-checks run before the LALR parser so a hostile filter costs O(n) and
never reaches deep recursion: length (characters) and bracket depth, counted
outside string literals.
"""

from __future__ import annotations

import lark
from celpy import Environment
from celpy.celparser import CELParseError

from app.filter.errors import FilterError

MAX_LENGTH = 4096
MAX_DEPTH = 64

_ENV: Environment | None = None


def _environment() -> Environment:
    # Built lazily: the first Environment builds the LALR table (0.15 s).
    global _ENV
    if _ENV is None:
        _ENV = Environment()
    return _ENV


def _nesting_depth(text: str) -> tuple[int, int]:
    """Deepest bracket/prefix-operator nesting outside strings, and where it peaked.

    ``!`` and unary ``-`` count as a level too: ``!!!!…x`` nests in the tree
    just like parentheses do.
    """
    depth = peak = peak_at = 0
    prefix_run = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            triple = text[i : i + 3] == ch * 3
            quote = ch * 3 if triple else ch
            i += len(quote)
            while i < n and not text.startswith(quote, i):
                i += 2 if text[i] == "\\" else 1
            i += len(quote)
            prefix_run = 0
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        if ch in "!-":
            prefix_run += 1
        elif not ch.isspace():
            prefix_run = 0
        level = depth + prefix_run
        if level > peak:
            peak, peak_at = level, i
        i += 1
    return peak, peak_at


def _offset(text: str, line: int | None, column: int | None) -> int:
    if not line or not column:
        return 0
    lines = text.split("\n")
    return sum(len(ln) + 1 for ln in lines[: line - 1]) + column - 1


def parse(text: str) -> lark.Tree[lark.Token]:
    """Parse ``text`` into cel-python's lark tree, or raise ``FilterError``."""
    if not text.strip():
        raise FilterError("empty filter", 0)
    if len(text) > MAX_LENGTH:
        raise FilterError(f"filter too long ({len(text)} characters, max {MAX_LENGTH})", MAX_LENGTH)
    depth, at = _nesting_depth(text)
    if depth > MAX_DEPTH:
        raise FilterError(f"filter nested too deeply (max {MAX_DEPTH} levels)", at)
    try:
        tree = _environment().compile(text)
    except CELParseError as exc:
        cause = exc.__context__
        detail = "syntax error"
        offset = _offset(text, exc.line, exc.column)
        if isinstance(cause, lark.exceptions.UnexpectedToken):
            if cause.token.type == "$END":
                raise FilterError(
                    "syntax error: unexpected end of filter", len(text.rstrip())
                ) from None
            detail = f"syntax error: unexpected {str(cause.token)!r}"
        elif isinstance(cause, lark.exceptions.UnexpectedCharacters):
            detail = "syntax error: unexpected character"
        raise FilterError(detail, offset) from None
    except (lark.exceptions.LarkError, RecursionError, ValueError) as exc:
        raise FilterError(f"syntax error ({type(exc).__name__})", 0) from None
    if not isinstance(tree, lark.Tree):
        raise FilterError("syntax error", 0)
    return tree
