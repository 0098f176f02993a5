"""Reading an instance's memos behind the API's back, to compare instances field by field."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from app.db.engine import create_engine
from app.db.schema import attachment, memo, memo_event, memo_relation, memo_tag, user_account

MEMO_FIELDS = (
    "content",
    "created_ts",
    "updated_ts",
    "visibility",
    "pinned",
    "state",
    "location_placeholder",
    "location_latitude",
    "location_longitude",
)


async def memos_of(database_url: str, data_dir: Path, username: str) -> dict[str, dict[str, Any]]:
    """Every memo ``username`` created: its fields, parent, relations, tags and attachments."""
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            uid = (
                await conn.execute(
                    sa.select(user_account.c.id).where(user_account.c.username == username)
                )
            ).scalar_one()
            rows = (await conn.execute(sa.select(memo).where(memo.c.creator_id == uid))).all()
            by_id = {
                r.id: r.uid for r in (await conn.execute(sa.select(memo.c.id, memo.c.uid))).all()
            }
            out: dict[str, dict[str, Any]] = {}
            for r in rows:
                rels = (
                    await conn.execute(
                        sa.select(memo_relation.c.related_memo_id, memo_relation.c.type).where(
                            memo_relation.c.memo_id == r.id
                        )
                    )
                ).all()
                tags = (
                    await conn.execute(
                        sa.select(memo_tag.c.tag)
                        .where(memo_tag.c.memo_id == r.id)
                        .order_by(memo_tag.c.position)
                    )
                ).scalars()
                atts = []
                for a in (
                    await conn.execute(
                        sa.select(attachment)
                        .where(attachment.c.memo_id == r.id)
                        .order_by(attachment.c.uid)
                    )
                ).all():
                    data = a.blob
                    if a.storage_key is not None:
                        data = (data_dir / "attachments" / a.storage_key).read_bytes()
                    atts.append(
                        (
                            a.uid,
                            a.filename,
                            a.mime_type,
                            a.size,
                            a.created_ts,
                            hashlib.sha256(data).hexdigest() if data is not None else None,
                            a.external_link,
                        )
                    )
                out[r.uid] = {
                    **{f: getattr(r, f) for f in MEMO_FIELDS},
                    "parent": by_id.get(r.parent_id) if r.parent_id is not None else None,
                    "relations": sorted((by_id[t], k) for t, k in rels),
                    "tags": list(tags),
                    "attachments": atts,
                }
            return out
    finally:
        await engine.dispose()


async def table_counts(database_url: str) -> dict[str, int]:
    """Row counts of the tables an import writes, plus the sum of memo versions."""
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            out = {}
            for t in (memo, memo_event, memo_relation, memo_tag, attachment):
                out[t.name] = (
                    await conn.execute(sa.select(sa.func.count()).select_from(t))
                ).scalar_one()
            out["versions"] = (
                await conn.execute(sa.select(sa.func.coalesce(sa.func.sum(memo.c.version), 0)))
            ).scalar_one()
            return out
    finally:
        await engine.dispose()


def stored_files(data_dir: Path) -> set[str]:
    root = data_dir / "attachments"
    return {p.name for p in root.iterdir()} if root.exists() else set()
