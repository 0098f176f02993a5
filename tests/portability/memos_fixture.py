"""Memos databases built with Memos' own DDL (``memos_ddl/``) and seeded as Memos writes rows.

Rows follow what each version's store code writes: bcrypt hashes from Go's
``bcrypt.GenerateFromPassword`` (``$2a$``), memo payloads in the proto3 JSON
mapping, reactions keyed by ``memos/<id>`` (0.22), ``memos/<uid>`` (0.26) or
``memo_id`` (0.31), pinned in ``memo_organizer`` (0.22) or ``memo.pinned``,
resources (0.22) or attachments, system settings as protojson.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bcrypt

DDL = Path(__file__).parent / "memos_ddl"
VERSIONS = ("0.22", "0.26", "0.31")
PASSWORDS = {"steven": "steven-password-1", "alice": "alice-password-1"}
BLOB = b"\x89PNG\r\n\x1a\n" + bytes(range(200))
LOCAL = b"local file bytes " * 20
CONTENT_1 = "Hello from Memos #work/q3\n\n- [ ] a task\r\nünïcode ✓"

T = {"m1": 1_700_000_000, "m2": 1_700_000_100, "m3": 1_700_000_200, "m4": 1_700_000_300}


def _go_bcrypt(password: str) -> str:
    # Go writes "$2a$"; cost 4 keeps the tests fast (Memos uses 10: same scheme).
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4, prefix=b"2a")).decode()


def ddl_files(version: str, dialect: str) -> list[Path]:
    files = [DDL / f"{dialect}-{version}.sql"]
    if version == "0.31":
        files += sorted(DDL.glob(f"{dialect}-0.31-0*.sql"))
    return files


@dataclass
class Seeded:
    hashes: dict[str, str]
    data_dir: Path


def rows(version: str, data_dir: Path) -> tuple[list[tuple[str, dict[str, Any]]], Seeded]:
    """(table, row) pairs to insert, in order, for ``version``."""
    hashes = {u: _go_bcrypt(p) for u, p in PASSWORDS.items()}
    (data_dir / "assets").mkdir(parents=True, exist_ok=True)
    (data_dir / "assets" / "photo.txt").write_bytes(LOCAL)
    (data_dir.parent / "outside.txt").write_bytes(b"secret outside the data dir")
    host = "HOST" if version == "0.22" else "ADMIN"
    user = [
        (
            "user",
            dict(
                id=1,
                username="steven",
                role=host,
                email="s@example.com",
                nickname="Steven",
                password_hash=hashes["steven"],
                avatar_url="",
                description="me",
                created_ts=1_690_000_000,
                updated_ts=1_690_000_001,
            ),
        ),
        (
            "user",
            dict(
                id=2,
                username="alice",
                role="USER",
                email="",
                nickname="Alice",
                password_hash=hashes["alice"],
                avatar_url="",
                description="",
                created_ts=1_690_000_100,
                updated_ts=1_690_000_100,
            ),
        ),
        (
            "user",
            dict(
                id=3,
                username="bad name!",
                role="USER",
                email="",
                nickname="",
                password_hash=hashes["alice"],
                avatar_url="",
                description="",
                created_ts=1_690_000_200,
                updated_ts=1_690_000_200,
            ),
        ),
        (
            "user",
            dict(
                id=4,
                username="sso",
                role="USER",
                email="",
                nickname="",
                password_hash="",
                avatar_url="",
                description="",
                created_ts=1_690_000_300,
                updated_ts=1_690_000_300,
            ),
        ),
    ]
    payload_1: dict[str, Any] = {"property": {"tags": ["work", "work/q3"], "hasTaskList": True}}
    if version != "0.22":
        payload_1 = {
            "property": {"hasTaskList": True, "hasIncompleteTasks": True},
            "location": {"placeholder": "Office", "latitude": 52.52, "longitude": 13.405},
            "tags": ["work", "work/q3"],
        }

    def memo(
        id_: int,
        uid: str,
        creator: int,
        ts: int,
        content: str,
        visibility: str,
        row_status: str = "NORMAL",
        pinned: bool = False,
        payload: dict[str, Any] | None = None,
        space_id: int | None = None,
    ) -> dict[str, Any]:
        row = dict(
            id=id_,
            uid=uid,
            creator_id=creator,
            created_ts=ts,
            updated_ts=ts + 60,
            row_status=row_status,
            content=content,
            visibility=visibility,
            payload=json.dumps(payload or {}),
        )
        if version == "0.22":
            row["tags"] = json.dumps((payload or {}).get("property", {}).get("tags", []))
        else:
            row["pinned"] = pinned
        if version == "0.31":
            row["space_id"] = space_id
        return row

    memos = [
        (
            "memo",
            memo(1, "memo-one", 1, T["m1"], CONTENT_1, "PUBLIC", pinned=True, payload=payload_1),
        ),
        ("memo", memo(2, "memo-two", 1, T["m2"], "archived one", "PRIVATE", row_status="ARCHIVED")),
        ("memo", memo(3, "comment-three", 2, T["m3"], "nice memo!", "PROTECTED")),
        ("memo", memo(4, "refs-four", 2, T["m4"], "see memo-one", "PRIVATE")),
        ("memo", memo(5, "by-bad-user", 3, T["m4"], "lost", "PRIVATE")),
    ]
    if version == "0.22":  # pinned lived in memo_organizer, per user
        memos.append(("memo_organizer", dict(memo_id=1, user_id=1, pinned=1)))
    relations = [
        ("memo_relation", dict(memo_id=3, related_memo_id=1, type="COMMENT")),
        ("memo_relation", dict(memo_id=4, related_memo_id=1, type="REFERENCE")),
        ("memo_relation", dict(memo_id=4, related_memo_id=5, type="REFERENCE")),  # to a lost memo
    ]
    reaction: dict[str, Any] = dict(id=1, created_ts=T["m4"], creator_id=2, reaction_type="👍")
    if version == "0.22":
        reaction["content_id"] = "memos/1"
    elif version == "0.26":
        reaction["content_id"] = "memos/memo-one"
    else:
        reaction["memo_id"] = 1
    reactions = [("reaction", reaction)]
    if version == "0.26":  # a row left from 0.23 (numeric id) survives upgrades
        reactions.append(
            (
                "reaction",
                dict(
                    id=2, created_ts=T["m4"], creator_id=1, content_id="memos/4", reaction_type="🚀"
                ),
            )
        )
    table = "resource" if version == "0.22" else "attachment"

    def att(
        id_: int,
        uid: str,
        filename: str,
        memo_id: int | None,
        storage_type: str,
        reference: str = "",
        blob: bytes | None = None,
        type_: str = "text/plain",
        size: int = 0,
    ) -> tuple[str, dict[str, Any]]:
        return (
            table,
            dict(
                id=id_,
                uid=uid,
                creator_id=1,
                created_ts=1_700_000_050,
                updated_ts=1_700_000_050,
                filename=filename,
                blob=blob,
                type=type_,
                size=size or len(blob or b""),
                memo_id=memo_id,
                storage_type=storage_type,
                reference=reference,
                payload="{}",
            ),
        )

    database_type = "" if version == "0.22" else "DATABASE"
    attachments = [
        att(1, "att-blob", "image.png", 1, database_type, blob=BLOB, type_="image/png"),
        att(2, "att-local", "photo.txt", 1, "LOCAL", reference="assets/photo.txt", size=len(LOCAL)),
        att(
            3,
            "att-link",
            "spec.pdf",
            2,
            "EXTERNAL",
            reference="https://files.example.com/spec.pdf",
            type_="application/pdf",
            size=1234,
        ),
        att(4, "att-s3", "s3.bin", 2, "S3", reference="bucket/key.bin", size=10),
        att(5, "att-outside", "x.txt", None, "LOCAL", reference="../outside.txt", size=27),
    ]
    settings: list[tuple[str, dict[str, Any]]] = []
    if version == "0.22":
        settings = [
            (
                "system_setting",
                dict(name="GENERAL", value=json.dumps({"disallowSignup": True}), description=""),
            ),
            (
                "system_setting",
                dict(
                    name="MEMO_RELATED",
                    value=json.dumps({"disallowPublicVisible": False, "contentLengthLimit": 16384}),
                    description="",
                ),
            ),
        ]
        settings.append(("migration_history", dict(version="0.22.0", created_ts=1_690_000_000)))
    elif version == "0.26":
        settings = [
            (
                "system_setting",
                dict(
                    name="GENERAL",
                    value=json.dumps({"disallowUserRegistration": True}),
                    description="",
                ),
            ),
            (
                "system_setting",
                dict(
                    name="MEMO_RELATED",
                    value=json.dumps(
                        {"disallowPublicVisibility": False, "contentLengthLimit": 16384}
                    ),
                    description="",
                ),
            ),
            (
                "system_setting",
                dict(
                    name="BASIC",
                    value=json.dumps({"secretKey": "s", "schemaVersion": "0.26.0"}),
                    description="",
                ),
            ),
        ]
    else:
        settings = [
            (
                "system_setting",
                dict(
                    name="GENERAL",
                    value=json.dumps({"disallowUserRegistration": True}),
                    description="",
                ),
            ),
            (
                "system_setting",
                dict(
                    name="MEMO_RELATED",
                    value=json.dumps({"contentLengthLimit": 16384}),
                    description="",
                ),
            ),
            (
                "system_setting",
                dict(
                    name="ACCESS",
                    value=json.dumps({"accessMode": "INSTANCE_ACCESS_MODE_PUBLIC"}),
                    description="",
                ),
            ),
            (
                "system_setting",
                dict(
                    name="BASIC",
                    value=json.dumps({"secretKey": "s", "schemaVersion": "0.31.0"}),
                    description="",
                ),
            ),
        ]
    spaces: list[tuple[str, dict[str, Any]]] = []
    if version == "0.31":
        spaces = [
            ("space", dict(id=1, uid="team", title="Team", description="the team", payload="{}")),
            ("space_member", dict(space_id=1, user_id=1, status="ACTIVE", role="ADMIN")),
            ("space_member", dict(space_id=1, user_id=2, status="ACTIVE", role="USER")),
            (
                "memo",
                memo(6, "space-six", 1, T["m4"] + 10, "in the team space", "SPACE", space_id=1),
            ),
        ]
    out = user + spaces[:3] + memos + spaces[3:] + relations + reactions + attachments + settings
    return out, Seeded(hashes, data_dir)


def build_sqlite(path: Path, version: str, data_dir: Path) -> Seeded:
    db = sqlite3.connect(path)
    for f in ddl_files(version, "sqlite"):
        db.executescript(f.read_text())
    inserts, seeded = rows(version, data_dir)
    for table, row in inserts:
        cols = ", ".join(row)
        marks = ", ".join("?" * len(row))
        db.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", list(row.values()))
    db.commit()
    db.close()
    return seeded


async def build_postgres(url: str, version: str, data_dir: Path) -> Seeded:
    import asyncpg

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        for f in ddl_files(version, "postgres"):
            await conn.execute(f.read_text())
        inserts, seeded = rows(version, data_dir)
        for table, row in inserts:
            quoted = '"user"' if table == "user" else table
            cols = ", ".join(row)
            marks = ", ".join(f"${i + 1}" for i in range(len(row)))
            values = [
                (v if not (k == "pinned" and table == "memo") else bool(v)) for k, v in row.items()
            ]
            if table == "memo_organizer":
                values = [int(v) for v in values]
            await conn.execute(f"INSERT INTO {quoted} ({cols}) VALUES ({marks})", *values)
        # SERIAL columns were given explicit ids: move the sequences past them, as Memos' would be.
        for table in (
            "user",
            "memo",
            "resource" if version == "0.22" else "attachment",
            "reaction",
        ):
            quoted = '"user"' if table == "user" else table
            await conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{quoted}', 'id'), "
                f"(SELECT max(id) FROM {quoted}))"
            )
    finally:
        await conn.close()
    return seeded
