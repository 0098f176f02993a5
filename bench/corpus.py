"""A realistic, deterministic memo corpus, bulk-loaded straight into the tables.

Seeding bypasses the API (a million API writes would take hours) but fills
every derived column the way the app would: the Markdown of a pool of a few
thousand distinct contents is run through ``app.memos.markdown.derive`` once,
and memos reuse those contents, so ``title``, ``snippet``, the ``has_*``
flags and ``memo_tag`` (with ancestors) always agree with ``content``.

The shape of the data:

- ``users`` accounts (first one ADMIN), creators Zipf-distributed (s=0.8), so
  a few users write a lot and most write little;
- Markdown of 50–600 characters: words from a fixed vocabulary, headings,
  ``#tags`` (hierarchical, from a pool of 200), task lists, links, code;
- visibility 60% PRIVATE, 30% PROTECTED, 10% PUBLIC; 3% ARCHIVED; 1% pinned;
- ``created_ts`` spread over five years, in id order with jitter, 20% edited
  later; 2% with a location;
- a few reactions (4% of memos), references (2%) and attachment rows (3%, no
  blob), so the list's batched related-row queries have something to find.

Loading: SQLite through the sync ``sqlite3`` module, ``synchronous=OFF``,
batches of ``BATCH`` rows per transaction; PostgreSQL through asyncpg
``COPY`` with foreign-key triggers off. On both, the secondary indexes of the
seeded tables are dropped first and re-created after the load, which is how a
bulk load is done in practice (and far faster than index maintenance per row).
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import sqlalchemy as sa

from app.auth.secrets import SESSION_PREFIX, digest, new_secret
from app.db import schema
from app.db.sqlite_functions import register
from app.filter.ddl import content_index_ddl
from app.memos.markdown import derive
from bench.timing import Progress, step

BATCH = 10_000
DAY = 86_400
YEAR = 365 * DAY
PASSWORD_HASH = "$argon2id$v=19$m=65536,t=3,p=4$YmVuY2gtc2FsdA$bench-dummy-hash-not-a-password"

_WORDS = (
    "the a of and to in is it for on with as at by from this that be are was have not but or "
    "today tomorrow yesterday morning evening week month plan idea note draft review meeting "
    "call email reply follow up ship release deploy build test fix bug issue feature design "
    "read book chapter article paper quote thought question answer reason because maybe "
    "coffee tea lunch dinner walk run gym sleep family friend kids garden house kitchen "
    "project team client budget deadline sprint backlog roadmap goal habit journal reflect "
    "learn practice write code function query index database server cache latency memory "
    "travel train flight hotel city river mountain weather rain sun snow spring autumn "
    "music album film series episode podcast recipe bread soup salad market price list "
    "small large quick slow better worse important urgent later done open closed next last "
    "remember forget decide change keep start stop finish try again really still already "
    "interesting useful simple hard easy clear messy quiet busy calm tired happy grateful"
)
WORDS = tuple(_WORDS.split())

_TAG_ROOTS = (
    "work home book project idea journal health travel finance learning music film code "
    "recipe garden family reading writing meeting todo research design ops personal archive"
)
TAG_ROOTS = tuple(_TAG_ROOTS.split())
TAG_CHILDREN = ("notes", "2024", "2025", "ideas", "done", "later", "draft", "review")
REACTIONS = ("👍", "❤️", "🎉", "😂", "🤔", "👀")
LANGS = ("python", "sql", "bash", "go")

MEMO_COLUMNS = (
    "id",
    "uid",
    "creator_id",
    "content",
    "visibility",
    "state",
    "pinned",
    "created_ts",
    "updated_ts",
    "title",
    "snippet",
    "has_link",
    "has_task_list",
    "has_code",
    "has_incomplete_tasks",
    "location_placeholder",
    "location_latitude",
    "location_longitude",
    "parent_id",
    "space_id",
    "tree",
    "origin",
    "version",
)
TAG_COLUMNS = ("memo_id", "tag", "position")
REACTION_COLUMNS = ("id", "memo_id", "creator_id", "reaction_type", "created_ts")
RELATION_COLUMNS = ("memo_id", "related_memo_id", "type")
ATTACHMENT_COLUMNS = (
    "id",
    "uid",
    "creator_id",
    "memo_id",
    "filename",
    "mime_type",
    "size",
    "storage_key",
    "blob",
    "external_link",
    "created_ts",
    "storage_type",
)
USER_COLUMNS = (
    "id",
    "username",
    "role",
    "state",
    "nickname",
    "email",
    "description",
    "avatar_url",
    "password_hash",
    "created_ts",
    "updated_ts",
)
TABLES: dict[str, tuple[sa.Table, tuple[str, ...]]] = {
    "memo": (schema.memo, MEMO_COLUMNS),
    "memo_tag": (schema.memo_tag, TAG_COLUMNS),
    "reaction": (schema.reaction, REACTION_COLUMNS),
    "memo_relation": (schema.memo_relation, RELATION_COLUMNS),
    "attachment": (schema.attachment, ATTACHMENT_COLUMNS),
}
SEQUENCED = ("user_account", "memo", "reaction", "attachment", "auth_session")


def _check_columns() -> None:
    """Fail loudly when the schema grows a column the seeder does not fill."""
    for table, columns in [*TABLES.values(), (schema.user_account, USER_COLUMNS)]:
        if set(columns) != set(table.c.keys()):
            missing = sorted(set(table.c.keys()) ^ set(columns))
            raise RuntimeError(f"bench/corpus.py is out of date for {table.name}: {missing}")


_check_columns()


@dataclass(frozen=True, slots=True)
class CorpusSpec:
    memos: int
    users: int = 1_000
    contents: int = 4_000
    seed: int = 42
    now: int = field(default_factory=lambda: int(time.time()))


@dataclass(frozen=True, slots=True)
class Content:
    """A distinct Markdown body and the memo columns derived from it."""

    text: str
    title: str
    snippet: str
    has_link: bool
    has_task_list: bool
    has_code: bool
    has_incomplete_tasks: bool
    tags: tuple[str, ...]


@dataclass(slots=True)
class Batch:
    memos: list[tuple[Any, ...]] = field(default_factory=list)
    memo_tag: list[tuple[Any, ...]] = field(default_factory=list)
    reaction: list[tuple[Any, ...]] = field(default_factory=list)
    memo_relation: list[tuple[Any, ...]] = field(default_factory=list)
    attachment: list[tuple[Any, ...]] = field(default_factory=list)

    def rows(self) -> dict[str, list[tuple[Any, ...]]]:
        return {
            "memo": self.memos,
            "memo_tag": self.memo_tag,
            "reaction": self.reaction,
            "memo_relation": self.memo_relation,
            "attachment": self.attachment,
        }


@dataclass(frozen=True, slots=True)
class SeedReport:
    memos: int
    users: int
    rows: dict[str, int]
    load_s: float
    index_s: float
    analyze_s: float
    measured_user_id: int
    measured_username: str
    measured_user_memos: int
    token: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "memos": self.memos,
            "users": self.users,
            "rows": self.rows,
            "load_s": round(self.load_s, 2),
            "index_s": round(self.index_s, 2),
            "analyze_s": round(self.analyze_s, 2),
            "total_s": round(self.load_s + self.index_s + self.analyze_s, 2),
            "measured_user_id": self.measured_user_id,
            "measured_user_memos": self.measured_user_memos,
        }


# --- Markdown -------------------------------------------------------------------------------


def tag_pool() -> list[str]:
    """200 tags, three levels: 24 roots, 6 children each, one grandchild per root, 8 more."""
    tags: list[str] = []
    for root in TAG_ROOTS:
        tags.append(root)
        tags.extend(f"{root}/{child}" for child in TAG_CHILDREN[:6])
        tags.append(f"{root}/notes/important")
    tags.extend(f"{r}/{c}" for r in TAG_ROOTS[:4] for c in TAG_CHILDREN[6:])
    return tags


def _sentence(rng: random.Random, low: int = 4, high: int = 14) -> str:
    words = rng.choices(WORDS, k=rng.randint(low, high))
    return words[0].capitalize() + " " + " ".join(words[1:]) + rng.choice(".....?!")


def _extras(rng: random.Random, tags: list[str]) -> list[str]:
    blocks: list[str] = []
    if rng.random() < 0.15:
        items = [
            f"- [{'x' if rng.random() < 0.5 else ' '}] {_sentence(rng, 2, 5)}"
            for _ in range(rng.randint(2, 5))
        ]
        blocks.append("\n".join(items))
    if rng.random() < 0.12:
        slug = "-".join(rng.choices(WORDS, k=3))
        blocks.append(
            rng.choice(
                (
                    f"See [{slug}](https://example.org/{slug}).",
                    f"Link: https://example.com/notes/{slug}",
                )
            )
        )
    if rng.random() < 0.08:
        name = "_".join(rng.choices(WORDS, k=2))
        blocks.append(
            rng.choice(
                (
                    f"Use `{name}()` here.",
                    f"```{rng.choice(LANGS)}\n{name} = {rng.randint(1, 99)}\n```",
                )
            )
        )
    if rng.random() < 0.6:
        blocks.append(" ".join(f"#{t}" for t in rng.sample(tags, rng.randint(1, 3))))
    return blocks


def markdown(rng: random.Random, tags: list[str]) -> str:
    """One memo body of 50–600 characters."""
    target = int(rng.triangular(50, 600, 160))
    head = [f"# {_sentence(rng, 2, 6).rstrip('.?!')}"] if rng.random() < 0.15 else []
    extras = _extras(rng, tags)
    budget = target - sum(len(b) + 2 for b in head + extras)
    paragraph: list[str] = []
    while sum(len(s) + 1 for s in paragraph) < max(budget, 30):
        paragraph.append(_sentence(rng))
    text = "\n\n".join([*head, " ".join(paragraph), *extras])
    if len(text) > 600:
        text = text[:600].rsplit(" ", 1)[0]
    return text


def content_pool(size: int, rng: random.Random) -> list[Content]:
    tags = tag_pool()
    pool = []
    for _ in range(size):
        text = markdown(rng, tags)
        props = derive(text)
        pool.append(
            Content(
                text,
                props.title,
                props.snippet,
                props.has_link,
                props.has_task_list,
                props.has_code,
                props.has_incomplete_tasks,
                props.tags,
            )
        )
    return pool


# --- rows -----------------------------------------------------------------------------------


def user_rows(spec: CorpusSpec) -> list[tuple[Any, ...]]:
    start = spec.now - 5 * YEAR - 30 * DAY
    return [
        (
            i,
            f"user{i:04d}",
            "ADMIN" if i == 1 else "USER",
            "NORMAL",
            f"User {i}",
            f"user{i}@example.org",
            "",
            "",
            PASSWORD_HASH,
            start + i * 60,
            start + i * 60,
        )
        for i in range(1, spec.users + 1)
    ]


def creator_weights(users: int) -> list[float]:
    """Cumulative Zipf(s=0.8) weights over user ids 1..users, heaviest writer first."""
    cumulative, total = [], 0.0
    for rank in range(1, users + 1):
        total += 1 / rank**0.8
        cumulative.append(total)
    return cumulative


def measured_user(users: int) -> int:
    """The user the benchmark signs in as: the median writer (rank users/2)."""
    return max(2, users // 2)


def batches(spec: CorpusSpec, pool: Sequence[Content]) -> Iterator[Batch]:
    """The corpus, ``BATCH`` memos at a time, in id order."""
    rng = random.Random(spec.seed)
    cumulative = creator_weights(spec.users)
    user_ids = list(range(1, spec.users + 1))
    start = spec.now - 5 * YEAR
    step_s = 5 * YEAR / max(spec.memos, 1)
    counters = {"reaction": 0, "attachment": 0}
    origin = json.dumps({"kind": "session"})
    for first in range(1, spec.memos + 1, BATCH):
        batch = Batch()
        size = min(BATCH, spec.memos - first + 1)
        creators = rng.choices(user_ids, cum_weights=cumulative, k=size)
        for offset, creator in enumerate(creators):
            memo_id = first + offset
            created = int(start + (memo_id - 1) * step_s + rng.uniform(0, step_s))
            content = pool[rng.randrange(len(pool))]
            _memo(batch, rng, content, memo_id, creator, created, spec, origin)
            _related(batch, rng, memo_id, creator, created, user_ids, counters)
        yield batch


def _memo(
    batch: Batch,
    rng: random.Random,
    c: Content,
    memo_id: int,
    creator: int,
    created: int,
    spec: CorpusSpec,
    origin: str,
) -> None:
    roll = rng.random()
    visibility = "PRIVATE" if roll < 0.6 else ("PROTECTED" if roll < 0.9 else "PUBLIC")
    updated = min(created + rng.randint(60, 30 * DAY), spec.now) if rng.random() < 0.2 else created
    located = rng.random() < 0.02
    batch.memos.append(
        (
            memo_id,
            f"{rng.getrandbits(88):022x}",
            creator,
            c.text,
            visibility,
            "ARCHIVED" if rng.random() < 0.03 else "NORMAL",
            rng.random() < 0.01,
            created,
            updated,
            c.title,
            c.snippet,
            c.has_link,
            c.has_task_list,
            c.has_code,
            c.has_incomplete_tasks,
            "Somewhere" if located else None,
            rng.uniform(-60, 60) if located else None,
            rng.uniform(-170, 170) if located else None,
            None,
            None,
            None,
            origin,
            1,
        )
    )
    batch.memo_tag.extend((memo_id, tag, i) for i, tag in enumerate(c.tags))


def _related(
    batch: Batch,
    rng: random.Random,
    memo_id: int,
    creator: int,
    created: int,
    user_ids: list[int],
    counters: dict[str, int],
) -> None:
    if rng.random() < 0.04:
        for user in rng.sample(user_ids, rng.randint(1, 3)):
            counters["reaction"] += 1
            batch.reaction.append(
                (counters["reaction"], memo_id, user, rng.choice(REACTIONS), created + 3600)
            )
    if memo_id > 1 and rng.random() < 0.02:
        batch.memo_relation.append(
            (memo_id, rng.randint(max(1, memo_id - 5000), memo_id - 1), "REFERENCE")
        )
    if rng.random() < 0.03:
        counters["attachment"] += 1
        uid = f"{rng.getrandbits(88):022x}"
        batch.attachment.append(
            (
                counters["attachment"],
                uid,
                creator,
                memo_id,
                f"photo-{uid[:6]}.jpg",
                "image/jpeg",
                rng.randint(20_000, 4_000_000),
                f"bench/{uid}",
                None,
                None,
                created,
                "LOCAL",
            )
        )


# --- loading --------------------------------------------------------------------------------


def _placeholders(columns: Sequence[str], style: str) -> str:
    return ", ".join("?" if style == "qmark" else f"${i}" for i, _ in enumerate(columns, 1))


def _insert_sql(table: str, columns: Sequence[str]) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({_placeholders(columns, 'qmark')})"


def _session_row(user_id: int, now: int) -> tuple[str, tuple[Any, ...]]:
    token = new_secret(SESSION_PREFIX)
    return token, (1, user_id, digest(token), "bench-csrf", now, now + 30 * DAY, now)


SESSION_COLUMNS = (
    "id",
    "user_id",
    "token_hash",
    "csrf_token",
    "created_ts",
    "expires_ts",
    "last_seen_ts",
)


def seed_sqlite(path: str, spec: CorpusSpec) -> SeedReport:
    """Load the corpus into the migrated SQLite file at ``path`` (blocking)."""
    pool = content_pool(spec.contents, random.Random(spec.seed + 1))
    db = sqlite3.connect(path, isolation_level=None)
    register(db)  # the memo_trgm triggers call daybook_fold()
    for pragma in ("synchronous=OFF", "cache_size=-524288", "temp_store=MEMORY"):
        db.execute(f"PRAGMA {pragma}")
    indexes = _sqlite_drop_indexes(db)
    triggers = _sqlite_drop_content_triggers(db)
    db.execute("BEGIN")
    db.executemany(_insert_sql("user_account", USER_COLUMNS), user_rows(spec))
    token, session = _session_row(measured_user(spec.users), spec.now)
    db.execute(_insert_sql("auth_session", SESSION_COLUMNS), session)
    db.execute("COMMIT")
    counts = dict.fromkeys(TABLES, 0)
    progress = Progress("seed memos", spec.memos)
    for batch in batches(spec, pool):
        db.execute("BEGIN")
        for table, rows in batch.rows().items():
            if rows:
                db.executemany(_insert_sql(table, TABLES[table][1]), rows)
                counts[table] += len(rows)
        db.execute("COMMIT")
        progress.advance(len(batch.memos))
    load_s = progress.done()
    load_s += _timed(lambda: _sqlite_backfill_content_index(db, triggers), "fill memo_trgm")
    index_s = _timed(lambda: [db.execute(sql) for sql in indexes], "re-create indexes")
    analyze_s = _timed(lambda: db.execute("ANALYZE"), "ANALYZE")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    own = db.execute(
        "SELECT count(*) FROM memo WHERE creator_id = ?", (measured_user(spec.users),)
    ).fetchone()[0]
    db.close()
    return _report(spec, counts, load_s, index_s, analyze_s, own, token)


def _sqlite_drop_indexes(db: sqlite3.Connection) -> list[str]:
    """Drop the explicit indexes of the seeded tables; returns their CREATE statements."""
    names = ", ".join(f"'{t}'" for t in [*TABLES, "user_account"])
    rows = db.execute(
        f"SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
        f"AND tbl_name IN ({names})"
    ).fetchall()
    for name, _ in rows:
        db.execute(f'DROP INDEX "{name}"')
    return [sql for _, sql in rows]


def _sqlite_drop_content_triggers(db: sqlite3.Connection) -> list[str]:
    """Drop the memo_trgm triggers (FTS5 per-row upkeep); returns their CREATE statements."""
    rows = db.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'memo_trgm_%'"
    ).fetchall()
    for name, _ in rows:
        db.execute(f'DROP TRIGGER "{name}"')
    return [sql for _, sql in rows]


def _sqlite_backfill_content_index(db: sqlite3.Connection, triggers: list[str]) -> None:
    """Fill memo_trgm in one statement (migration 0002's own backfill), then restore triggers."""
    if not triggers:
        return
    db.execute("BEGIN")
    for sql in content_index_ddl("sqlite"):
        if sql.startswith("INSERT INTO memo_trgm"):
            db.execute(sql)
    db.execute("COMMIT")
    for sql in triggers:
        db.execute(sql)


def _timed(action: Any, label: str) -> float:
    started = time.perf_counter()
    action()
    elapsed = time.perf_counter() - started
    step(f"{label}: {elapsed:.1f}s")
    return elapsed


def _report(
    spec: CorpusSpec,
    counts: dict[str, int],
    load_s: float,
    index_s: float,
    analyze_s: float,
    own: int,
    token: str,
) -> SeedReport:
    user_id = measured_user(spec.users)
    return SeedReport(
        memos=spec.memos,
        users=spec.users,
        rows=counts,
        load_s=load_s,
        index_s=index_s,
        analyze_s=analyze_s,
        measured_user_id=user_id,
        measured_username=f"user{user_id:04d}",
        measured_user_memos=own,
        token=token,
    )


async def seed_postgresql(dsn: str, spec: CorpusSpec) -> SeedReport:
    """Load the corpus into the migrated PostgreSQL database at ``dsn`` with COPY."""
    pool = await asyncio.to_thread(content_pool, spec.contents, random.Random(spec.seed + 1))
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("SET synchronous_commit = off")
        await conn.execute("SET session_replication_role = replica")  # no FK triggers
        await conn.execute("SET maintenance_work_mem = '1GB'")
        indexes = await _pg_drop_indexes(conn)
        await conn.copy_records_to_table(
            "user_account", records=user_rows(spec), columns=USER_COLUMNS
        )
        token, session = _session_row(measured_user(spec.users), spec.now)
        await conn.copy_records_to_table("auth_session", records=[session], columns=SESSION_COLUMNS)
        counts = dict.fromkeys(TABLES, 0)
        progress = Progress("seed memos", spec.memos)
        for batch in batches(spec, pool):
            async with conn.transaction():
                for table, rows in batch.rows().items():
                    if rows:
                        await conn.copy_records_to_table(
                            table, records=rows, columns=TABLES[table][1]
                        )
                        counts[table] += len(rows)
            progress.advance(len(batch.memos))
        load_s = progress.done()
        started = time.perf_counter()
        for sql in indexes:
            await conn.execute(sql)
        index_s = time.perf_counter() - started
        step(f"re-create indexes: {index_s:.1f}s")
        for table in SEQUENCED:
            await conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT coalesce(max(id), 0) + 1 FROM {table}), false)"
            )
        started = time.perf_counter()
        await conn.execute("VACUUM ANALYZE")
        analyze_s = time.perf_counter() - started
        step(f"VACUUM ANALYZE: {analyze_s:.1f}s")
        own = await conn.fetchval(
            "SELECT count(*) FROM memo WHERE creator_id = $1", measured_user(spec.users)
        )
    finally:
        await conn.close()
    return _report(spec, counts, load_s, index_s, analyze_s, int(own), token)


async def _pg_drop_indexes(conn: asyncpg.Connection) -> list[str]:
    """Drop the non-constraint indexes of the seeded tables; returns their definitions."""
    rows = await conn.fetch(
        """
        SELECT i.indexname, i.indexdef FROM pg_indexes i
        WHERE i.schemaname = current_schema() AND i.tablename = ANY($1::text[])
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c
                          WHERE c.conindid = format('%I.%I', i.schemaname, i.indexname)::regclass)
        """,
        [*TABLES, "user_account"],
    )
    for row in rows:
        await conn.execute(f'DROP INDEX "{row["indexname"]}"')
    return [row["indexdef"] for row in rows]
