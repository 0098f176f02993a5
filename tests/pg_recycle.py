"""Per-test PostgreSQL databases, emptied back to the template's state instead of re-made.

``CREATE DATABASE ... TEMPLATE`` costs 300 to 500 ms on the 2-core machine
(every relation's files are copied), and about a thousand PostgreSQL tests
paid it, roughly four minutes of CI's twenty. A database a test is done with
is instead emptied and handed to the next test: its tables that hold rows
are truncated (new empty files, so the planner sees what a fresh clone
shows: no pages, no ``reltuples``), its sequences restored, its planner
statistics and activity counters deleted. That costs tens of milliseconds.

A database is recycled only when it still matches the template: its schema
objects, columns, indexes, constraints, triggers, functions, extensions,
per-database settings, grants and the rows the template itself holds
(``alembic_version``) give the same fingerprint. Anything else (a test that
altered the schema, a reset that failed) drops it, as before.
"""

from __future__ import annotations

import asyncpg

# One row per object worth comparing; md5 of them all, in a stable order.
FINGERPRINT = """
SELECT md5(string_agg(x, E'\\n' ORDER BY x)) FROM (
  SELECT 'nsp:' || nspname AS x FROM pg_namespace
   WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'
  UNION ALL
  SELECT 'rel:' || n.nspname || '.' || c.relname || ':' || c.relkind::text || ':'
         || c.relowner::text || ':' || coalesce(c.relacl::text, '')
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'
  UNION ALL
  SELECT 'col:' || a.attrelid::regclass::text || '.' || a.attname || ':'
         || format_type(a.atttypid, a.atttypmod) || ':' || a.attnotnull::text || ':'
         || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    FROM pg_attribute a
    JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE a.attnum > 0 AND NOT a.attisdropped
     AND n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'
  UNION ALL
  SELECT 'idx:' || pg_get_indexdef(i.indexrelid)
    FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'
  UNION ALL
  SELECT 'con:' || conrelid::regclass::text || '.' || conname || ':'
         || pg_get_constraintdef(oid)
    FROM pg_constraint
   WHERE connamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
  UNION ALL
  SELECT 'trg:' || tgrelid::regclass::text || '.' || tgname || ':' || tgenabled::text
    FROM pg_trigger WHERE NOT tgisinternal
  UNION ALL
  SELECT 'fn:' || p.oid::regprocedure::text || ':' || md5(coalesce(p.prosrc, ''))
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
   WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
  UNION ALL
  SELECT 'ext:' || extname || ':' || extversion FROM pg_extension
  UNION ALL
  SELECT 'set:' || array_to_string(setconfig, ';') FROM pg_db_role_setting
   WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
  UNION ALL
  SELECT 'alembic:' || version_num FROM alembic_version
) objects
"""

# Tables of the public schema that hold any pages (what a test wrote to) or
# that were analysed (``reltuples`` is -1 until then, as in a fresh clone).
WRITTEN = """
SELECT quote_ident(c.relname) FROM pg_class c
 WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'm')
   AND c.relname <> 'alembic_version'
   AND (pg_relation_size(c.oid) > 0 OR c.reltuples >= 0)
 ORDER BY 1
"""

SEQUENCES = """
SELECT quote_ident(schemaname) || '.' || quote_ident(sequencename), start_value
  FROM pg_sequences WHERE schemaname = 'public'
"""

FORGET_STATISTICS = """
DELETE FROM pg_statistic
 WHERE starelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'public'::regnamespace)
"""


async def fingerprint(conn: asyncpg.Connection, seeded: tuple[str, ...]) -> str:
    """The objects' md5, and the rows of the tables the template itself fills."""
    parts = [str(await conn.fetchval(FINGERPRINT))]
    for table in seeded:
        rows = await conn.fetchval(
            f"SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM {table} t"
        )
        parts.append(f"{table}:{rows}")
    return ";".join(parts)


async def empty(conn: asyncpg.Connection, seeded: tuple[str, ...]) -> None:
    """Truncate what was written, restart every sequence, forget statistics and counters."""
    written = [row[0] for row in await conn.fetch(WRITTEN) if row[0] not in seeded]
    async with conn.transaction():
        if written:
            await conn.execute(f"TRUNCATE {', '.join(written)} RESTART IDENTITY CASCADE")
        for name, start in await conn.fetch(SEQUENCES):
            await conn.execute("SELECT setval($1::regclass, $2, false)", name, start)
        await conn.execute(FORGET_STATISTICS)
        await conn.execute("DELETE FROM pg_statistic_ext_data")
    await conn.execute("SELECT pg_stat_reset()")


class Recycler:
    """The per-worker pool of per-test databases cloned from ``template``."""

    def __init__(self, host: str, template: str, prefix: str) -> None:
        self.host, self.template, self.prefix = host, template, prefix
        self.spare: list[str] = []
        self.made = 0
        # From the first clone: the template's fingerprint, and the tables it fills.
        self.expected: str | None = None
        self.seeded: tuple[str, ...] = ()

    async def _connect(self, database: str) -> asyncpg.Connection:
        return await asyncpg.connect(host=self.host, user="postgres", database=database)

    async def _admin(self, *statements: str) -> None:
        conn = await self._connect("postgres")
        try:
            for statement in statements:
                await conn.execute(statement)
        finally:
            await conn.close()

    async def take(self) -> str:
        """A database in the template's state: a recycled one, or a new clone."""
        if self.spare:
            return self.spare.pop()
        self.made += 1
        name = f"{self.prefix}_{self.made}"
        await self._admin(f"CREATE DATABASE {name} TEMPLATE {self.template}")
        if self.expected is None:
            conn = await self._connect(name)
            try:
                self.seeded = tuple(row[0] for row in await conn.fetch(WRITTEN))
                self.expected = await fingerprint(conn, self.seeded)
            finally:
                await conn.close()
        return name

    async def give_back(self, name: str) -> None:
        """Empty ``name`` for the next test, or drop it when it no longer matches."""
        try:
            await self._admin(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                f" WHERE datname = '{name}' AND pid <> pg_backend_pid()"
            )
            conn = await self._connect(name)
            try:
                if await fingerprint(conn, self.seeded) == self.expected:
                    await empty(conn, self.seeded)
                    self.spare.append(name)
                    return
            finally:
                await conn.close()
        except (asyncpg.PostgresError, OSError):
            pass  # whatever went wrong, a new clone replaces it
        await self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    async def close(self) -> None:
        while self.spare:
            await self._admin(f"DROP DATABASE IF EXISTS {self.spare.pop()} WITH (FORCE)")
