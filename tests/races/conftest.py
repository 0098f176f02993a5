"""Race tests: the hashing embedder (no model), so search runs without one."""

from __future__ import annotations

import pathlib

import pytest

from app.settings import Settings


@pytest.fixture
def settings(database_url: str, tmp_path: pathlib.Path) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        database_url=database_url,
        password_hasher="cheap",
        secret="test-secret",
        log_format="json",
        embedding_model="hash-64",
    )
