"""Race tests: the hashing embedder (no model), so search runs without one."""

from __future__ import annotations

import pathlib

import pytest

from app.settings import Settings
from tests.support import make_settings


@pytest.fixture
def settings(database_url: str, tmp_path: pathlib.Path) -> Settings:
    return make_settings(database_url, tmp_path, embedding_model="hash-64")
