"""Validation messages in Daybook's words, not the validating library's.

Litestar and msgspec describe a refused value in their own vocabulary
("Expected `str` of length <= 16", "Object missing required field `x`").
A Memos client shows that text to its user, so it is reworded here into
plain sentences naming JSON types; a message no pattern knows is passed
through with the backquotes removed.
"""

from __future__ import annotations

import re

_TYPES = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "object": "an object",
    "array": "a list",
    "null": "null",
}
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Expected `str` of length <= (\d+)"), "must be at most {0} characters"),
    (re.compile(r"Expected `str` of length >= (\d+)"), "must be at least {0} characters"),
    (re.compile(r"Expected `(?:array|object)` of length <= (\d+)"), "must have at most {0} items"),
    (re.compile(r"Expected `(?:array|object)` of length >= (\d+)"), "must have at least {0} items"),
    (re.compile(r"Expected `(?:int|float)` <= (-?\d+(?:\.\d+)?)"), "must be at most {0}"),
    (re.compile(r"Expected `(?:int|float)` >= (-?\d+(?:\.\d+)?)"), "must be at least {0}"),
    (re.compile(r"Expected `(?:int|float)` < (-?\d+(?:\.\d+)?)"), "must be less than {0}"),
    (re.compile(r"Expected `(?:int|float)` > (-?\d+(?:\.\d+)?)"), "must be more than {0}"),
    (re.compile(r"Object missing required field `([^`]+)`"), "{0} is required"),
    (re.compile(r"Expected `str` matching regex .*"), "has characters that are not allowed"),
)
_GOT = re.compile(r"Expected `([a-z |]+)`, got `([a-z]+)`")
_AT = re.compile(r" - at `\$((?:\.[^`\[]+|\[\d+\])*)`\Z")


def reword(message: str) -> str:
    """One library message in Daybook's words; the JSON path, if any, leads it."""
    where = ""
    at = _AT.search(message)
    if at:
        where = at.group(1).lstrip(".")
        message = message[: at.start()]
    text = _plain(message)
    return f"{where}: {text}" if where else text


def _plain(message: str) -> str:
    for pattern, template in _RULES:
        found = pattern.match(message)
        if found:
            return template.format(*found.groups())
    got = _GOT.match(message)
    if got:
        wanted = " or ".join(_TYPES.get(t.strip(), t.strip()) for t in got.group(1).split("|"))
        return f"must be {wanted}, not {_TYPES.get(got.group(2), got.group(2))}"
    return message.replace("`", "")
