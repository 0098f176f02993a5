"""Stored vector encoding and the in-process cache of decoded vectors.

Vectors are stored as little-endian float16 (768 bytes at 384 dimensions):
half the size of float32, and the cosine error (< 1e-3) does not change
rankings. The cache holds float32 rows for fast matrix products, keyed by
memo id *and* the content hash read in the same query that admitted the
memo, so a vector written by another process is never served stale.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading

import numpy as np
import numpy.typing as npt

from app.search.embedder import Vectors

_F16 = np.dtype("<f2")


def content_hash(text: str) -> int:
    """The first 8 bytes of SHA-256, as a signed 64-bit integer (fits BIGINT)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little", signed=True)


def encode(vector: npt.NDArray[np.float32]) -> bytes:
    return np.asarray(vector, dtype=_F16).tobytes()


def decode(blob: bytes, dim: int) -> Vectors:
    v = np.frombuffer(blob, dtype=_F16)
    if v.shape != (dim,):
        raise ValueError(f"stored vector has {v.shape[0]} values, expected {dim}")
    return v.astype(np.float32)


def decode_many(blobs: list[bytes], dim: int) -> Vectors:
    """Rows of ``dim`` values from stored blobs: one join and one conversion, not one per row."""
    bad = next((len(b) // 2 for b in blobs if len(b) != 2 * dim), None)
    if bad is not None:
        raise ValueError(f"stored vector has {bad} values, expected {dim}")
    out: Vectors = np.frombuffer(b"".join(blobs), dtype=_F16).reshape(-1, dim).astype(np.float32)
    return out


def pgvector_text(vector: npt.NDArray[np.float32]) -> str:
    """pgvector's text input form, ``[0.1,0.2,...]``."""
    return "[" + ",".join(f"{x:.6g}" for x in np.asarray(vector, dtype=np.float32)) + "]"


class VectorCache:
    """Decoded vectors of one model: rows of a float32 matrix, found by memo id.

    ``_row_of[memo_id]`` is the row (or -1) and ``_key_of[row]`` the content
    hash the row was decoded for, so looking up a whole admitted set is a few
    vectorised numpy operations.
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._row_of = np.full(1024, -1, dtype=np.int64)
        self._key_of = np.zeros(1024, dtype=np.int64)
        self._id_of = np.full(1024, -1, dtype=np.int64)  # memo id per row; -1: free
        self._matrix: Vectors = np.zeros((1024, dim), dtype=np.float32)
        self._used = 0
        self._free: list[int] = []
        self._lock = threading.Lock()
        # SQLite: the last ``memo_embedding_log.seq`` whose changes this cache holds
        # (``None``: never synced), see ``semantic.sync_cache``.
        self.synced_seq: int | None = None
        self.has_log: bool | None = None
        # Held while the cache is brought to a read snapshot *and* used under it
        # (``semantic.semantic_arm``, ``semantic.warm_cache``), so no other request
        # moves it past that snapshot meanwhile, and two cold loads never interleave.
        self.lock = asyncio.Lock()

    def __len__(self) -> int:
        return self._used - len(self._free)

    def lookup(
        self, ids: npt.NDArray[np.int64], keys: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(hit ids, their rows, missed ids) for the admitted (id, content hash) pairs."""
        row_of = self._row_of
        inside = ids < len(row_of)
        rows = np.full(len(ids), -1, dtype=np.int64)
        rows[inside] = row_of[ids[inside]]
        hit = rows >= 0
        hit[hit] = self._key_of[rows[hit]] == keys[hit]
        return ids[hit], rows[hit], ids[~hit]

    def _grow_ids(self, memo_id: int) -> None:
        if memo_id >= len(self._row_of):
            grown = np.full(max(memo_id + 1, 2 * len(self._row_of)), -1, dtype=np.int64)
            grown[: len(self._row_of)] = self._row_of
            self._row_of = grown

    def _grow_rows(self, rows: int) -> None:
        if rows > len(self._matrix):
            size = max(rows, 2 * len(self._matrix))
            matrix = np.zeros((size, self.dim), dtype=np.float32)
            matrix[: self._used] = self._matrix[: self._used]
            keys = np.zeros(size, dtype=np.int64)
            keys[: self._used] = self._key_of[: self._used]
            id_of = np.full(size, -1, dtype=np.int64)
            id_of[: self._used] = self._id_of[: self._used]
            self._matrix, self._key_of, self._id_of = matrix, keys, id_of

    def store(self, memo_id: int, key: int, vector: Vectors) -> int:
        with self._lock:
            self._grow_ids(memo_id)
            row = int(self._row_of[memo_id])
            if row < 0 and self._free:
                row = self._free.pop()
            elif row < 0:
                self._grow_rows(self._used + 1)
                row = self._used
                self._used += 1
            self._matrix[row] = vector
            self._key_of[row] = key
            self._id_of[row] = memo_id
            self._row_of[memo_id] = row
            return row

    def store_many(
        self, ids: npt.NDArray[np.int64], keys: npt.NDArray[np.int64], vectors: Vectors
    ) -> None:
        """``store`` for many rows (a cold load): appended in one step when all ids are new."""
        if not len(ids):
            return
        with self._lock:
            self._grow_ids(int(ids.max()))
            appendable = (
                not self._free
                and bool((self._row_of[ids] < 0).all())
                and len(np.unique(ids)) == len(ids)
            )
            if appendable:
                end = self._used + len(ids)
                self._grow_rows(end)
                rows = np.arange(self._used, end, dtype=np.int64)
                self._matrix[rows] = vectors
                self._key_of[rows] = keys
                self._id_of[rows] = ids
                self._row_of[ids] = rows
                self._used = end
                return
        for memo_id, key, vector in zip(ids.tolist(), keys.tolist(), vectors, strict=True):
            self.store(memo_id, key, vector)

    def remove(self, memo_id: int) -> None:
        """Forget ``memo_id``'s vector (deleted, or of another model now)."""
        with self._lock:
            if memo_id >= len(self._row_of) or self._row_of[memo_id] < 0:
                return
            row = int(self._row_of[memo_id])
            self._row_of[memo_id] = -1
            self._id_of[row] = -1
            self._free.append(row)

    def clear(self) -> None:
        with self._lock:
            self._row_of[:] = -1
            self._id_of[:] = -1
            self._used = 0
            self._free = []

    def score_all(self, query: Vectors) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(memo ids, cosine similarities) of every cached vector: one matrix product."""
        used = self._used
        ids = self._id_of[:used]
        live = ids >= 0
        scores: npt.NDArray[np.float32] = self._matrix[:used] @ query
        return ids[live], scores[live]

    def scores(self, rows: npt.NDArray[np.int64], query: Vectors) -> npt.NDArray[np.float32]:
        """Cosine similarity of ``query`` with the given rows.

        For a large share of the cache one product over the whole matrix and a
        gather of the scores is cheaper than gathering the rows first.
        """
        if len(rows) == 0:
            return np.zeros(0, dtype=np.float32)
        matrix = self._matrix
        if len(rows) * 4 > self._used:
            out: npt.NDArray[np.float32] = (matrix[: self._used] @ query)[rows]
            return out
        gathered: npt.NDArray[np.float32] = matrix[rows] @ query
        return gathered
