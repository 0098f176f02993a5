"""Which Memos schema a database has: the differences between 0.22 and 0.31 that matter.

From ``store/migration/{sqlite,postgres}/`` of ``usememos/memos``:

- 0.22: ``resource`` (storage_type, reference, payload), ``memo.tags``,
  ``memo.payload``, pinned per user in ``memo_organizer``, reactions keyed by
  ``content_id = 'memos/<numeric id>'``, roles HOST/ADMIN/USER;
- 0.24: ``memo.pinned`` (filled from ``memo_organizer``), ``memo.tags``
  dropped, reaction ``content_id`` becomes ``'memos/<uid>'`` for new rows
  (old rows keep the numeric form: both are read);
- 0.26: ``resource`` renamed ``attachment``, ``memo_organizer`` dropped,
  HOST becomes ADMIN;
- 0.31: ``reaction.memo_id`` replaces ``content_id``; spaces (``space``,
  ``space_member`` with ``status`` and ``role``, ``memo.space_id``, the SPACE
  visibility); the ``ACCESS`` instance setting.

Detection is by the tables and columns present, never by a version string
alone, because databases that went through upgrades carry every step's
leftovers. The version label is informational (``migration_history`` in
0.22, else the ``BASIC`` setting's ``schemaVersion``, else the features).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MemosSchema", "detect"]


@dataclass(frozen=True, slots=True)
class MemosSchema:
    dialect: str  # sqlite | postgresql
    attachment_table: str  # resource (< 0.26) | attachment
    memo_has_pinned: bool
    has_memo_organizer: bool
    reaction_by_memo_id: bool  # 0.31: reaction.memo_id; before: reaction.content_id
    has_spaces: bool
    memo_has_space_id: bool
    member_has_status: bool
    version_label: str

    @property
    def user_table(self) -> str:
        return '"user"' if self.dialect == "postgresql" else "user"


def _label(columns: dict[str, set[str]], stored: str | None) -> str:
    if stored:
        return stored
    if "space" in columns:
        return "0.31"
    if "memo_id" in columns.get("reaction", set()):
        return "0.31 (before spaces)"
    if "attachment" in columns:
        return "0.26-0.30"
    if "pinned" in columns.get("memo", set()):
        return "0.24-0.25"
    return "0.22-0.23"


def detect(dialect: str, columns: dict[str, set[str]], stored_version: str | None) -> MemosSchema:
    """The schema from ``columns`` (table name → its column names)."""
    required = {"user", "memo", "memo_relation", "system_setting"}
    missing = required - set(columns)
    if missing or not ({"resource", "attachment"} & set(columns)):
        raise ValueError(
            "not a Memos database (0.22 or later): missing tables "
            + ", ".join(sorted(missing or {"attachment"}))
        )
    return MemosSchema(
        dialect=dialect,
        attachment_table="attachment" if "attachment" in columns else "resource",
        memo_has_pinned="pinned" in columns["memo"],
        has_memo_organizer="memo_organizer" in columns,
        reaction_by_memo_id="memo_id" in columns.get("reaction", set()),
        has_spaces="space" in columns and "space_member" in columns,
        memo_has_space_id="space_id" in columns["memo"],
        member_has_status="status" in columns.get("space_member", set()),
        version_label=_label(columns, stored_version),
    )
