"""What a carry knows as it goes: its options, its report, and the id maps between the two."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from app.access.audience import AccessMode

TOOL = "import-memos-db"
MAX_PROBLEMS_SHOWN = 100

__all__ = ["TOOL", "CarriedUser", "CarryOptions", "Report", "State"]


@dataclass(frozen=True, slots=True)
class CarryOptions:
    data_dir: Path
    memos_data_dir: Path | None
    dry_run: bool = False
    access_mode: str | None = None
    progress: Callable[[int], None] | None = None
    max_attachment_bytes: int = 256 * 1024 * 1024


@dataclass
class Report:
    version: str = ""
    dry_run: bool = False
    carried: Counter[str] = field(default_factory=Counter)
    existing: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0

    def problem(self, kind: str, message: str) -> None:
        self.skipped[kind] += 1
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS_SHOWN:
            self.problems.append(f"{kind}: {message}")

    def note(self, message: str) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS_SHOWN:
            self.problems.append(message)

    def lines(self) -> list[str]:
        head = "dry run, nothing written: " if self.dry_run else ""
        out = [f"{head}Memos {self.version}"]
        kinds = ["setting", "user", "space", "member", "memo", "comment", "relation", "reaction"]
        kinds.append("attachment")
        for kind in kinds:
            out.append(
                f"  {kind + 's':<12} carried {self.carried[kind]:>7}  already here "
                f"{self.existing[kind]:>7}  not carried {self.skipped[kind]:>7}"
            )
        if self.problem_count:
            out.append(f"could not carry, or carried differently ({self.problem_count}):")
            out.extend(f"  {p}" for p in self.problems)
            if self.problem_count > len(self.problems):
                out.append(f"  ... and {self.problem_count - len(self.problems)} more")
        return out


@dataclass(frozen=True, slots=True)
class CarriedUser:
    id: int
    username: str
    role: str


@dataclass
class State:
    opts: CarryOptions
    report: Report
    users: dict[int, CarriedUser] = field(default_factory=dict)  # Memos user id → Daybook user
    spaces: dict[int, tuple[int, str]] = field(default_factory=dict)  # Memos → (id, uid)
    memos: dict[int, int] = field(default_factory=dict)  # Memos memo id → Daybook memo id
    written_keys: list[str] = field(default_factory=list)
    now: int = 0
    mode: AccessMode = AccessMode.PRIVATE
