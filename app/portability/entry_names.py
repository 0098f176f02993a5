"""The container rules for ZIP entry names (CWE-22, "zip slip"), as a pure check.

Names are validated, never repaired: one unsafe name refuses the whole
archive. The rules are Memos' (``core/memoexport/path.go``): UTF-8, relative
(no leading ``/``), ``/`` as the only separator, no empty, ``.`` or ``..``
segment, and no backslash, colon (drive letters), NUL, C0 control or DEL.
Daybook adds a length bound. Nothing ever uses an entry name as a file
system path (attachment bytes are stored under server-chosen keys), so these
rules are a refusal of hostile archives, not the only line of defence.
"""

from __future__ import annotations

MAX_NAME_BYTES = 1024

__all__ = ["MAX_NAME_BYTES", "decode_name", "entry_name_problem", "is_directory_entry"]


def decode_name(raw: bytes) -> str | None:
    """The entry name as text, or None when it is not valid UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def is_directory_entry(name: str, size: int) -> bool:
    """A directory entry: a name ending in ``/`` that holds no bytes (optional, skipped)."""
    return name.endswith("/") and size == 0


def entry_name_problem(name: str) -> str | None:
    """Why ``name`` breaks the container rules, or None when it is acceptable.

    A directory entry's trailing ``/`` is stripped by the caller first.
    """
    if name == "":
        return "entry name is empty"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return f"entry name is longer than {MAX_NAME_BYTES} bytes"
    if name.startswith("/"):
        return "entry name is absolute"
    for ch in name:
        if ord(ch) < 0x20 or ch in "\\:\x7f":
            return "entry name contains a forbidden character (backslash, colon or control)"
    for segment in name.split("/"):
        if segment == "":
            return "entry name contains an empty segment"
        if segment in (".", ".."):
            return "entry name contains a dot segment"
    return None
