"""The backup directory's ``manifest.json``: what was copied, from which revision."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FORMAT = 1
NAME = "manifest.json"
SQLITE_FILE = "daybook.db"
PG_FILE = "daybook.pgdump"
FILES_DIR = "attachments"


class BadBackup(Exception):
    """The directory is not a complete Daybook backup."""


@dataclass(frozen=True, slots=True)
class Manifest:
    dialect: str  # sqlite | postgresql
    revision: str | None
    created: str  # ISO 8601, UTC
    database: str | None  # file name in the backup; None when it could not be dumped
    memos: int = 0
    attachments: dict[str, int] = field(default_factory=dict)  # per storage type
    files: int = 0  # LOCAL attachment files copied
    missing_files: list[str] = field(default_factory=list)  # deleted after the snapshot
    s3_bucket: str = ""  # S3 objects stay in their bucket; not copied
    format: int = FORMAT

    def write(self, directory: Path) -> None:
        (directory / NAME).write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")

    @classmethod
    def read(cls, directory: Path) -> Manifest:
        try:
            raw: Any = json.loads((directory / NAME).read_text())
        except FileNotFoundError:
            raise BadBackup(f"{directory}: no {NAME} (not a daybook backup)") from None
        except ValueError as exc:
            raise BadBackup(f"{directory / NAME}: not valid JSON ({exc})") from None
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise BadBackup(f"{directory / NAME}: unknown backup format")
        try:
            return cls(**{k: raw[k] for k in cls.__dataclass_fields__ if k in raw})
        except TypeError as exc:
            raise BadBackup(f"{directory / NAME}: {exc}") from None
