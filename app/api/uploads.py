"""Multipart attachment uploads, parsed while they arrive: the file straight to disk.

The body limit middleware (``app.api.body_limits``) feeds each chunk of a
``multipart/form-data`` upload to :class:`StreamingForm` as it arrives
(python-multipart's streaming parser). The ``file`` part is written to an
anonymous spool file beside the attachment store (``O_TMPFILE``: a killed
process leaves nothing behind) and counted as it goes: one byte past the
attachment size limit and the upload is refused with 413 at once, with
nothing kept. The other parts (``filename``, ``type``, ``memo``) are small
and bounded. The app then receives an empty body and the parsed upload in
the scope (:data:`SCOPE_KEY`); the route hands the spool file to
``app.attachments.storage.put_file``, which links it into the store (no
copy), streams it to S3, or (DATABASE storage) reads it into the row.
Memory per upload stays at one chunk whatever the file's size.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header

__all__ = [
    "SCOPE_KEY",
    "FormError",
    "StreamingForm",
    "TooLarge",
    "Upload",
    "boundary_of",
]

SCOPE_KEY = "daybook.upload"
FILE_FIELD = "file"
MAX_FIELD = 8 * 1024  # a text part: a file name, a MIME type, a memo name
MAX_PARTS = 16


class FormError(ValueError):
    """400: the multipart body is malformed or not an attachment upload."""


class TooLarge(ValueError):
    """413: the file part passed the attachment size limit."""


@dataclass
class Upload:
    """A parsed upload: the file part on disk (``path``) and the text parts."""

    spool: IO[bytes] | None = None
    size: int = 0
    filename: str = ""
    content_type: str = ""
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> Path | None:
        """A path naming the spool file (for ``put_file``), while it is open."""
        if self.spool is None:
            return None
        return (
            Path(f"/proc/self/fd/{self.spool.fileno()}")
            if _anonymous(self.spool)
            else (Path(self.spool.name))
        )

    def close(self) -> None:
        if self.spool is not None:
            with contextlib.suppress(OSError):
                self.spool.close()
            self.spool = None


def _anonymous(spool: IO[bytes]) -> bool:
    return isinstance(spool.name, int)


def _open_spool(directory: Path) -> IO[bytes]:
    """An anonymous file in ``directory`` (``O_TMPFILE``), else a temporary named one."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    flag = getattr(os, "O_TMPFILE", 0)
    if flag:
        try:
            fd = os.open(directory, flag | os.O_RDWR, 0o600)
            return os.fdopen(fd, "w+b")
        except OSError:
            pass  # a file system without O_TMPFILE: a named file, deleted on close
    return tempfile.NamedTemporaryFile(dir=directory, prefix=".upload-", delete=True)


def boundary_of(content_type: bytes) -> bytes | None:
    kind, params = parse_options_header(content_type)
    if kind != b"multipart/form-data":
        return None
    boundary = params.get(b"boundary")
    if not boundary:
        raise FormError("multipart body: the Content-Type names no boundary")
    return boundary


class StreamingForm:
    """Feed it the body's chunks (:meth:`write`), then :meth:`finish` for the :class:`Upload`."""

    def __init__(self, boundary: bytes, limit: int, spool_dir: Path) -> None:
        self.limit = limit
        self.spool_dir = spool_dir
        self.upload = Upload()
        self._parts = 0
        self._headers: dict[str, str] = {}
        self._header_field = bytearray()
        self._header_value = bytearray()
        self._name = ""
        self._is_file = False
        self._text = bytearray()
        self._done = False
        self._parser = MultipartParser(
            boundary,
            {
                "on_part_begin": self._part_begin,
                "on_header_field": self._on_header_field,
                "on_header_value": self._on_header_value,
                "on_header_end": self._header_end,
                "on_headers_finished": self._headers_finished,
                "on_part_data": self._part_data,
                "on_part_end": self._part_end,
                "on_end": self._end,
            },
        )

    def write(self, chunk: bytes) -> None:
        try:
            self._parser.write(chunk)
        except (TooLarge, FormError):
            self.upload.close()
            raise
        except FormParserError as exc:
            self.upload.close()
            raise FormError(f"multipart body: {exc}") from None

    def finish(self) -> Upload:
        try:
            self._parser.finalize()
        except FormParserError as exc:
            self.upload.close()
            raise FormError(f"multipart body: {exc}") from None
        if not self._done:
            self.upload.close()
            raise FormError("multipart body: it ends before its closing boundary")
        if self.upload.spool is None:
            raise FormError("file: a multipart upload needs a 'file' part")
        self.upload.spool.flush()
        return self.upload

    # -- parser callbacks --

    def _part_begin(self) -> None:
        self._parts += 1
        if self._parts > MAX_PARTS:
            raise FormError(f"multipart body: more than {MAX_PARTS} parts")
        self._headers = {}
        self._name, self._is_file = "", False
        self._text = bytearray()

    def _on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_field += data[start:end]

    def _on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _header_end(self) -> None:
        name = bytes(self._header_field).decode("latin-1").strip().lower()
        self._headers[name] = bytes(self._header_value).decode("utf-8", "replace").strip()
        self._header_field, self._header_value = bytearray(), bytearray()

    def _headers_finished(self) -> None:
        disposition, params = parse_options_header(self._headers.get("content-disposition", ""))
        if disposition != b"form-data" or b"name" not in params:
            raise FormError("multipart body: a part without a form-data name")
        self._name = params[b"name"].decode("utf-8", "replace")
        if self._name == FILE_FIELD:
            if self.upload.spool is not None:
                raise FormError("file: only one file per upload")
            self._is_file = True
            self.upload.spool = _open_spool(self.spool_dir)
            self.upload.filename = params.get(b"filename", b"").decode("utf-8", "replace")
            self.upload.content_type = self._headers.get("content-type", "")

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._is_file:
            assert self.upload.spool is not None
            self.upload.size += end - start
            if self.upload.size > self.limit:
                raise TooLarge(f"file: exceeds the attachment size limit of {self.limit} bytes")
            self.upload.spool.write(data[start:end])
        else:
            self._text += data[start:end]
            if len(self._text) > MAX_FIELD:
                raise FormError(f"{self._name}: longer than {MAX_FIELD} bytes")

    def _part_end(self) -> None:
        if not self._is_file and self._name:
            self.upload.fields[self._name] = bytes(self._text).decode("utf-8", "replace")

    def _end(self) -> None:
        self._done = True
