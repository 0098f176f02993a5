"""MiniLM's memory-mapped build in the data directory (app.search.model_cache, decision 0050)."""

from __future__ import annotations

import os
import pathlib
import sys
import time

import numpy as np
import pytest

from app.search import model_cache
from app.search.embedder import MiniLMEmbedder
from app.search.trim import release_free_memory

TEXTS = [
    "The mechanic replaced the brake pads on my car",
    "short",
    "a much longer note about the brake pads, the invoice and the garage visit " * 12,
    "我今天去了北京看长城",
]


def test_the_build_gives_the_source_vectors_and_is_mapped(tmp_path: pathlib.Path) -> None:
    source = MiniLMEmbedder()
    built = MiniLMEmbedder(model_cache=tmp_path / "cache")
    assert built.model_path.parent.parent == tmp_path / "cache"
    assert built.model_path.parent.name.startswith(model_cache.PREFIX)
    assert np.array_equal(built.embed_passages(TEXTS), source.embed_passages(TEXTS))
    for text in TEXTS:
        assert np.array_equal(built.embed_query(text), source.embed_query(text))
    if sys.platform.startswith("linux"):  # the weights are a file mapping, not a copy
        data = str(built.model_path.parent / model_cache.DATA_FILE)
        assert data in pathlib.Path("/proc/self/maps").read_text()

    stamp = built.model_path.stat().st_mtime_ns
    again = MiniLMEmbedder(model_cache=tmp_path / "cache")  # the next start reuses it
    assert again.model_path == built.model_path
    assert again.model_path.stat().st_mtime_ns == stamp
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [built.model_path.parent.name]


def test_a_failed_build_falls_back_to_the_source_model(tmp_path: pathlib.Path) -> None:
    blocked = tmp_path / "cache"
    blocked.write_text("not a directory")
    model = MiniLMEmbedder(model_cache=blocked)
    assert model.model_path.name == "model.onnx" and blocked not in model.model_path.parents
    assert model.embed_query("vehicle repair").shape == (model.dim,)


def test_a_lost_publish_race_keeps_the_winner(tmp_path: pathlib.Path) -> None:
    final = tmp_path / "minilm-x"
    final.mkdir()
    (final / model_cache.MODEL_FILE).write_bytes(b"winner")
    mine = tmp_path / ".minilm-x-1"
    mine.mkdir()
    (mine / model_cache.MODEL_FILE).write_bytes(b"loser")
    model_cache.publish(mine, final)
    assert (final / model_cache.MODEL_FILE).read_bytes() == b"winner"

    half = tmp_path / "minilm-y"
    half.mkdir()
    (half / "junk").write_bytes(b"")
    other = tmp_path / ".minilm-y-1"
    other.mkdir()
    (other / model_cache.MODEL_FILE).write_bytes(b"")
    with pytest.raises(OSError):  # something else is in the way: not a build to use
        model_cache.publish(other, half)


def test_the_key_names_the_runtime_and_the_cpu(tmp_path: pathlib.Path) -> None:
    source = tmp_path / "model.onnx"
    source.write_bytes(b"model")
    key = model_cache.cache_key(source, "1.32.0")
    assert key.startswith(model_cache.PREFIX)
    assert key == model_cache.cache_key(source, "1.32.0")
    assert key != model_cache.cache_key(source, "1.33.0")
    source.write_bytes(b"another model")
    assert key != model_cache.cache_key(source, "1.32.0")
    assert model_cache.cpu_signature()


def test_other_builds_and_crashed_temporaries_are_removed(tmp_path: pathlib.Path) -> None:
    for name in ("minilm-old", "minilm-keep", ".minilm-keep-crashed", ".minilm-keep-running"):
        (tmp_path / name).mkdir()
    old = time.time() - model_cache.STALE_TMP_S - 60
    os.utime(tmp_path / ".minilm-keep-crashed", (old, old))
    (tmp_path / "unrelated").mkdir()
    model_cache._tidy(tmp_path, "minilm-keep")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".minilm-keep-running",
        "minilm-keep",
        "unrelated",
    ]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_free_memory_is_released_on_glibc() -> None:
    assert release_free_memory()
