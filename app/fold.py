"""The one case-folding function: Unicode simple lowercase, code point by code point.

A neutral module (no imports) because two layers need it: the filter compiler
(needles folded at compile time) and ``app.db`` (the ``daybook_fold`` SQLite
function); ``app.db`` must not import the compiler.

Why not ``str.lower()`` or ``str.casefold()``: PostgreSQL's ``lower()`` (libc
``C.UTF-8`` or the builtin provider) maps each code point to exactly one code
point using the simple lowercase mapping. Python's ``lower()`` applies two
context/expansion rules on top (``İ`` U+0130 becomes ``i̇``, two code points;
a word-final ``Σ`` becomes ``ς``), and ``casefold()`` expands further (``ß`` to
``ss``). Folding per code point keeps SQLite (a UDF calling this function), the
SQL renderer (needles folded at compile time) and the test oracle identical,
and equal to PostgreSQL's ``lower()`` except for Unicode-version drift (see
docs/decisions/0002-filter-semantics.md).

Being per code point also keeps substrings substrings: if ``fold(a)`` contains
``fold(b)``, a trigram index over ``fold(content)`` can never drop the row.
"""

from __future__ import annotations

_SPECIAL = "\u0130\u03a3"  # the only code points where str.lower() is not per code point


def fold(text: str) -> str:
    """Lowercase ``text`` with the Unicode simple mapping, one code point at a time."""
    if not any(ch in text for ch in _SPECIAL):
        return text.lower()
    return "".join("i" if ch == "\u0130" else ch.lower() for ch in text)
