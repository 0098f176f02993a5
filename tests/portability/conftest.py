"""A second, empty Daybook instance (same dialect) to import into, and archive helpers."""

from __future__ import annotations

import os
import pathlib
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.server import create_app
from app.settings import Settings
from tests.conftest import Templates, _admin_exec, _counter
from tests.support import make_settings


@dataclass
class Instance:
    client: AsyncTestClient[Any]
    settings: Settings


@pytest.fixture
async def other(
    dialect: str, templates: Templates, tmp_path: pathlib.Path
) -> AsyncIterator[Instance]:
    """Another fresh instance of the test's dialect, with its own data directory."""
    root = tmp_path / "other"
    root.mkdir()
    name = ""
    if dialect == "sqlite":
        target = root / "daybook.db"
        shutil.copyfile(templates.sqlite_file, target)
        url = f"sqlite:///{target}"
    else:
        assert templates.pg_root is not None
        name = f"o_{os.getpid()}_{next(_counter)}"
        await _admin_exec(templates.pg_root, f"CREATE DATABASE {name} TEMPLATE daybook_template")
        url = templates.pg_root.format(db=name)
    settings = make_settings(url, root)
    async with AsyncTestClient(app=create_app(settings)) as client:
        yield Instance(client, settings)
    if name:
        assert templates.pg_root is not None
        await _admin_exec(templates.pg_root, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
