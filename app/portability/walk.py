"""One import walk's context and bookkeeping, shared by the record and attachment steps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio.to_thread

from app.access.scope import SpaceScope
from app.memos.service import WriteContext
from app.portability.errors import ArchiveRefused, Problem
from app.portability.plan import Policy, Tally
from app.portability.staging import Staging
from app.portability.validation import ValidatedArchive

__all__ = ["ImportContext", "Walk", "in_thread"]


@dataclass(frozen=True, slots=True)
class ImportContext:
    write: WriteContext
    policy: Policy
    data_dir: Path
    dry_run: bool
    progress: Callable[[int], None] | None = None


@dataclass
class Walk:
    ctx: ImportContext
    archive: ValidatedArchive
    scope: SpaceScope
    spaces_by_uid: dict[str, int]
    spaces_by_title: dict[str, list[str]]
    tally: Tally = field(default_factory=Tally)
    problems: list[Problem] = field(default_factory=list)
    written_keys: list[str] = field(default_factory=list)

    @property
    def staging(self) -> Staging:
        return self.archive.staging

    def warn(self, uid: str, message: str) -> None:
        self.staging.warn(uid, message)

    def problem(self, uid: str, message: str) -> None:
        self.problems.append(Problem(uid, message))
        if len(self.problems) >= 50:
            raise ArchiveRefused(self.problems)


async def in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
