"""Pure decisions about an attachment's metadata and how its bytes are served.

- The display filename is sanitised: only the last path component is kept
  (``../../etc/passwd`` → ``passwd``), control and format characters are
  dropped, and an empty or dot-only result becomes ``file``.
- The MIME type is validated (``type/subtype``, lower-cased, parameters
  dropped), or guessed from the filename.
- Serving: only an allow-list of passive types is shown inline; everything
  else (HTML, SVG, XML, scripts, PDF, unknown) is a download, and every
  response carries ``X-Content-Type-Options: nosniff`` and a sandboxing CSP,
  so an upload can never run script on Daybook's origin.
"""

from __future__ import annotations

import mimetypes
import re
import unicodedata
from urllib.parse import quote

from app.errors import InvalidArgument

MAX_FILENAME = 255
MIME_RE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\Z")
INLINE_TYPES = frozenset(
    {
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "image/avif",
        "image/bmp",
        "text/plain",
    }
)
INLINE_PREFIXES = ("audio/", "video/")
FILE_CSP = "default-src 'none'; img-src 'self' data:; media-src 'self'; sandbox"


def clean_filename(raw: str) -> str:
    name = re.split(r"[/\\]", raw)[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch) not in ("Cc", "Cf", "Cs"))
    name = name.strip()
    if not name.strip("."):
        name = "file"
    return name[:MAX_FILENAME]


def mime_type(declared: str, filename: str) -> str:
    value = declared.split(";", 1)[0].strip().lower()
    if not value:
        guessed, _ = mimetypes.guess_type(filename, strict=False)
        return guessed or "application/octet-stream"
    if not MIME_RE.fullmatch(value):
        raise InvalidArgument(f"type: {declared[:80]!r} is not a MIME type (type/subtype)")
    return value


def is_inline(mime: str) -> bool:
    return mime in INLINE_TYPES or mime.startswith(INLINE_PREFIXES)


def content_disposition(mime: str, filename: str) -> str:
    kind = "inline" if is_inline(mime) else "attachment"
    ascii_name = "".join(
        ch if ch.isascii() and ch.isprintable() and ch not in '"\\;' else "_" for ch in filename
    )
    return f"{kind}; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename, safe='')}"


def cache_control(memo_visibility: str | None, public_instance: bool) -> str:
    """Only a PUBLIC memo's file is cached at all, and by shared caches only when
    anonymous readers could fetch it anyway (a PUBLIC instance)."""
    if memo_visibility != "PUBLIC":
        return "private, no-store"
    return "public, max-age=3600" if public_instance else "private, max-age=3600"


def file_headers(
    mime: str, filename: str, memo_visibility: str | None, public_instance: bool
) -> dict[str, str]:
    content_type = f"{mime}; charset=utf-8" if mime == "text/plain" else mime
    return {
        "Content-Type": content_type,
        "Content-Disposition": content_disposition(mime, filename),
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": FILE_CSP,
        "Cache-Control": cache_control(memo_visibility, public_instance),
    }
