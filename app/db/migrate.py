"""Run Alembic migrations programmatically, on the application's own engine."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

ROOT = Path(__file__).resolve().parents[2]


def alembic_config() -> Config:
    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    return cfg


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    def run(connection: Connection) -> None:
        cfg = alembic_config()
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, revision)

    async with engine.begin() as connection:
        await connection.run_sync(run)


async def downgrade(engine: AsyncEngine, revision: str) -> None:
    def run(connection: Connection) -> None:
        cfg = alembic_config()
        cfg.attributes["connection"] = connection
        command.downgrade(cfg, revision)

    async with engine.begin() as connection:
        await connection.run_sync(run)


async def current_revision(engine: AsyncEngine) -> str | None:
    def run(connection: Connection) -> str | None:
        return MigrationContext.configure(connection).get_current_revision()

    async with engine.connect() as connection:
        return await connection.run_sync(run)
