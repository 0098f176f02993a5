"""Tree paths inside a space (``access.md`` section 4), as pure functions.

A path is a dotted string of labels (``share.projects``); the root is the
empty string. Input may use ``/`` as the separator, and a leading ``~`` is
sugar for the writer's own home, ``home.<user id>``. Only the canonical
dotted form is ever stored, so every comparison (SQL or Python) is a plain
string comparison and ``~`` never reaches the database.
"""

from __future__ import annotations

import re

from app.errors import InvalidArgument

LABEL_RE = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")  # always with fullmatch
MAX_LABELS = 32
HOME = "home"

__all__ = ["HOME", "MAX_LABELS", "covers", "home_of", "parse_tree_path", "render_tree_path"]


def home_of(user_id: int) -> str:
    return f"{HOME}.{user_id}"


def parse_tree_path(raw: str, user_id: int, *, field: str = "tree") -> str:
    """``raw`` as a canonical dotted path; ``~`` resolves to ``user_id``'s home.

    A 400 names the field and the offending label; empty labels (``a..b``,
    a trailing separator) are refused rather than silently dropped.
    """
    if not isinstance(raw, str):
        raise InvalidArgument(f"{field}: must be a string path such as 'share.notes'")
    text = raw.replace("/", ".")
    if text == "":
        return ""
    labels = text.split(".")
    if labels[0] == "~":
        labels = [HOME, str(user_id), *labels[1:]]
    if len(labels) > MAX_LABELS:
        raise InvalidArgument(f"{field}: more than {MAX_LABELS} labels")
    for label in labels:
        if not LABEL_RE.fullmatch(label):
            shown = label if len(label) <= 70 else label[:67] + "..."
            raise InvalidArgument(
                f"{field}: label {shown!r} must be 1-64 letters, digits, '_' or '-' "
                "(labels are joined by '.' or '/'; '~' only as the first label)"
            )
    return ".".join(labels)


def render_tree_path(path: str, viewer_id: int | None) -> str:
    """The stored path as shown to ``viewer_id``: its own home reads ``~``."""
    if viewer_id is None:
        return path
    home = home_of(viewer_id)
    if path == home:
        return "~"
    if path.startswith(home + "."):
        return "~" + path[len(home) :]
    return path


def covers(prefix: str, path: str) -> bool:
    """Whether a grant or ceiling at ``prefix`` covers ``path`` (itself or a descendant)."""
    return prefix == "" or path == prefix or path.startswith(prefix + ".")
