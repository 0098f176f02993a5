"""A realistic, deterministic memo corpus, seeded the way users load one (issue 15).

Every memo is created through the product's own batch path,
``POST /api/v1/memos:batchCreate`` of the real app (in process), under its
creator's session, 1,000 per call: the memo service parses the Markdown and
fills ``title``, ``snippet``, the ``has_*`` flags, ``memo_tag`` (with
ancestors), the history event, the full-text rows and the embedding queue,
and the app's statistics keeper does whatever it does after large batches
(``app.db.statistics``). The benchmark never runs ``ANALYZE``, drops no
index and turns no durability setting off: the database is what a user who
imported the same memos through the API would have. (Earlier versions
bulk-loaded the tables with indexes dropped and ran ``ANALYZE`` afterwards,
which the product never does; their figures are not comparable.)

The shape of the data:

- ``users`` accounts (first one ADMIN), creators Zipf-distributed (s=0.8), so
  a few users write a lot and most write little;
- Markdown of 50–600 characters: words from a fixed vocabulary, headings,
  ``#tags`` (hierarchical, from a pool of 200), task lists, links, code;
- visibility 60% PRIVATE, 30% PROTECTED, 10% PUBLIC; 3% ARCHIVED; 1% pinned;
- ``created_ts`` spread over five years (``createTime``), 20% edited later;
  2% with a location;
- a few reactions (4% of memos), references (2%) and attachment rows (3%, no
  blob), so the list's related-row statement has something to find.

What does not go through the API, and why: the accounts and their sessions
(rows as sign-up and sign-in write them, with a dummy password hash: a
thousand argon2 hashes would dominate a small run), and the reactions,
references and attachment rows (inserted per batch with every index in place,
as their services write them: one request each would take longer than the
memos). None of it touches the planner's statistics.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from app.auth.secrets import SESSION_PREFIX, digest, new_secret
from app.db import schema
from app.db.engine import create_engine
from app.logs import configure_logging
from app.memos.markdown import derive
from app.portability.format import format_time
from app.server import create_app
from app.settings import Settings
from bench.timing import Progress, step

BATCH = 10_000
WINDOW = 5  # batches grouped by creator for memos:batchCreate
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
    "sha256",  # migration 0018: the seeded files have no bytes to hash
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
    measured_user_id: int
    measured_username: str
    measured_user_memos: int
    token: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "memos": self.memos,
            "users": self.users,
            "rows": self.rows,
            "seeded_via": "memos:batchCreate (no ANALYZE by the benchmark)",
            "load_s": round(self.load_s, 2),
            "total_s": round(self.load_s, 2),
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
                None,
            )
        )


# --- loading, as users load ----------------------------------------------------------------


def _session_row(user_id: int, now: int) -> tuple[str, dict[str, Any]]:
    token = new_secret(SESSION_PREFIX)
    return token, {
        "user_id": user_id,
        "token_hash": digest(token),
        "csrf_token": "bench-csrf",
        "created_ts": now,
        "expires_ts": now + 30 * DAY,
        "last_seen_ts": now,
    }


def _memo_body(row: tuple[Any, ...]) -> dict[str, Any]:
    """A planned memo row as the ``memos:batchCreate`` item that creates it."""
    m = dict(zip(MEMO_COLUMNS, row, strict=True))
    body: dict[str, Any] = {
        "content": m["content"],
        "visibility": m["visibility"],
        "state": m["state"],
        "pinned": bool(m["pinned"]),
        "createTime": format_time(m["created_ts"]),
        "updateTime": format_time(m["updated_ts"]),
    }
    if m["location_placeholder"] is not None:
        body["location"] = {
            "placeholder": m["location_placeholder"],
            "latitude": m["location_latitude"],
            "longitude": m["location_longitude"],
        }
    return body


async def _direct_rows(engine: AsyncEngine, spec: CorpusSpec) -> dict[int, str]:
    """Accounts and one session per account, inserted as sign-up and sign-in write
    them (every index in place; the password hash is a dummy, so no argon2 per
    account). Returns each account's bearer token."""
    tokens: dict[int, str] = {}
    sessions = []
    for user_id in range(1, spec.users + 1):
        token, row = _session_row(user_id, spec.now)
        tokens[user_id] = token
        sessions.append(row)
    async with engine.begin() as conn:
        users = [dict(zip(USER_COLUMNS, r, strict=True)) for r in user_rows(spec)]
        await conn.execute(schema.user_account.insert(), users)
        await conn.execute(schema.auth_session.insert(), sessions)
        if engine.dialect.name == "postgresql":
            await conn.exec_driver_sql(
                "SELECT setval(pg_get_serial_sequence('user_account', 'id'), "
                "(SELECT max(id) FROM user_account))"
            )
    return tokens


def _without_id(table: sa.Table, columns: Sequence[str], row: tuple[Any, ...]) -> dict[str, Any]:
    values = dict(zip(columns, row, strict=True))
    values.pop("id", None)
    return values


async def _related_rows(
    engine: AsyncEngine, batch: Batch, real: dict[int, int], counts: dict[str, int]
) -> None:
    """The batch's reactions, references and attachment rows, on the memos'
    real ids, inserted as the reaction, relation and attachment services write
    them (one transaction; ids from the database; no blob behind an attachment)."""
    reactions = []
    for r in batch.reaction:
        values = _without_id(schema.reaction, REACTION_COLUMNS, r)
        values["memo_id"] = real[values["memo_id"]]
        reactions.append(values)
    relations = [
        {"memo_id": real[a], "related_memo_id": real[b], "type": t}
        for a, b, t in batch.memo_relation
        if a in real and b in real
    ]
    attachments = []
    for r in batch.attachment:
        values = _without_id(schema.attachment, ATTACHMENT_COLUMNS, r)
        values["memo_id"] = real[values["memo_id"]]
        attachments.append(values)
    async with engine.begin() as conn:
        for table, rows in (
            (schema.reaction, reactions),
            (schema.memo_relation, relations),
            (schema.attachment, attachments),
        ):
            if rows:
                await conn.execute(table.insert(), rows)
                counts[table.name] += len(rows)


async def seed(url: str, spec: CorpusSpec, data_dir: Path | None = None) -> SeedReport:
    """Seed the migrated database at ``url`` (the app's URL form) as users do.

    Every memo goes through ``POST /api/v1/memos:batchCreate`` of the real app
    (in process: Litestar's test client, the app's own lifespan), 1,000 per
    call under its creator's session: the memo service derives the columns
    and tags, writes the history event, the full-text rows and the embedding
    queue, and the app's own statistics keeper does what it does after large
    batches (``app.db.statistics``). The benchmark itself never runs
    ``ANALYZE``, drops no index and turns no durability setting off.
    """
    pool = await asyncio.to_thread(content_pool, spec.contents, random.Random(spec.seed + 1))
    engine = create_engine(url)
    counts = dict.fromkeys(TABLES, 0)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-seed-") as tmp:
        settings = Settings(
            data_dir=data_dir or Path(tmp), database_url=url, log_format="json", rate_limits=False
        )
        try:
            tokens = await _direct_rows(engine, spec)
            app = create_app(settings)
            configure_logging("json", logging.WARNING)  # not a line per batch
            async with AsyncTestClient(app=app, timeout=600) as client:
                await _memos(client, engine, spec, pool, tokens, counts)
                # A batch of BATCH_ROWS or more nudged the statistics keeper; it runs
                # about a second after the last one (``Keeper.settle``): let it.
                await asyncio.sleep(3)
            async with engine.connect() as conn:
                counts["memo_tag"] = int(
                    (
                        await conn.execute(sa.select(sa.func.count()).select_from(schema.memo_tag))
                    ).scalar_one()
                )
                own = (
                    await conn.execute(
                        sa.select(sa.func.count())
                        .select_from(schema.memo)
                        .where(schema.memo.c.creator_id == measured_user(spec.users))
                    )
                ).scalar_one()
        finally:
            await engine.dispose()
    load_s = time.perf_counter() - started
    step(f"seeded through memos:batchCreate in {load_s:.0f}s")
    user_id = measured_user(spec.users)
    return SeedReport(
        memos=spec.memos,
        users=spec.users,
        rows=counts,
        load_s=load_s,
        measured_user_id=user_id,
        measured_username=f"user{user_id:04d}",
        measured_user_memos=int(own),
        token=tokens[user_id],
    )


async def _memos(
    client: AsyncTestClient[Any],
    engine: AsyncEngine,
    spec: CorpusSpec,
    pool: Sequence[Content],
    tokens: dict[int, str],
    counts: dict[str, int],
) -> None:
    progress = Progress("seed memos (batchCreate)", spec.memos)
    previous: dict[int, int] = {}
    window: list[Batch] = []
    for batch in batches(spec, pool):
        window.append(batch)
        if len(window) == WINDOW:
            previous = await _window(client, engine, window, tokens, counts, previous, progress)
            window = []
    if window:
        await _window(client, engine, window, tokens, counts, previous, progress)
    progress.done()


async def _window(
    client: AsyncTestClient[Any],
    engine: AsyncEngine,
    window: list[Batch],
    tokens: dict[int, str],
    counts: dict[str, int],
    previous: dict[int, int],
    progress: Progress,
) -> dict[int, int]:
    """Some batches' memos, grouped by creator (so calls carry up to 1,000), then
    their related rows; returns the planned → real id map of the window."""
    by_creator: dict[int, list[tuple[Any, ...]]] = {}
    for batch in window:
        for row in batch.memos:
            by_creator.setdefault(row[2], []).append(row)
    real: dict[int, int] = {}
    for creator, rows in by_creator.items():
        for start in range(0, len(rows), 1000):
            chunk = rows[start : start + 1000]
            response = await client.post(
                "/api/v1/memos:batchCreate",
                json={"memos": [_memo_body(r) for r in chunk]},
                headers={"Authorization": f"Bearer {tokens[creator]}"},
            )
            response.raise_for_status()
            uids = [r["name"].removeprefix("memos/") for r in response.json()["results"]]
            async with engine.connect() as conn:
                ids = dict(
                    (
                        await conn.execute(
                            sa.select(schema.memo.c.uid, schema.memo.c.id).where(
                                schema.memo.c.uid.in_(uids)
                            )
                        )
                    ).all()
                )
            for row, uid in zip(chunk, uids, strict=True):
                real[row[0]] = int(ids[uid])
            counts["memo"] += len(chunk)
            progress.advance(len(chunk))
    known = {**previous, **real}
    for batch in window:
        await _related_rows(engine, batch, known, counts)
    return real


def seed_sqlite(path: str, spec: CorpusSpec) -> SeedReport:
    """:func:`seed` for the SQLite file at ``path`` (blocking; run it in a thread)."""
    return asyncio.run(seed(f"sqlite:///{path}", spec))


async def seed_postgresql(url: str, spec: CorpusSpec) -> SeedReport:
    """:func:`seed` for the PostgreSQL database at ``url`` (the app's URL form)."""
    return await seed(url, spec)
