"""Why an archive was refused: problems tied to an entry or a memo uid."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.errors import InvalidArgument

__all__ = ["ArchiveRefused", "Problem"]


@dataclass(frozen=True, slots=True)
class Problem:
    where: str  # an entry name, a memo uid, or "archive"
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


class ArchiveRefused(InvalidArgument):
    """400: the archive breaks a container rule, a bound or a record's schema.

    Raised before anything is written; the body's ``details`` carry every
    problem found (a ``google.rpc.BadRequest`` with one field violation each).
    """

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        shown = "; ".join(str(p) for p in self.problems[:3])
        more = f" (and {len(self.problems) - 3} more)" if len(self.problems) > 3 else ""
        super().__init__(f"archive refused, nothing was imported: {shown}{more}")
        self.details = [
            {
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [
                    {"field": p.where, "description": p.message} for p in self.problems
                ],
            }
        ]

    @classmethod
    def one(cls, where: str, message: str) -> ArchiveRefused:
        return cls([Problem(where, message)])
