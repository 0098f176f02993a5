"""Stored vector encoding and the in-process cache of decoded vectors.

Vectors are stored as little-endian float16 (768 bytes at 384 dimensions):
half the size of float32, and the cosine error (< 1e-3) does not change
rankings. The cache holds float32 rows for fast matrix products, keyed by
memo id *and* the content hash read in the same query that admitted the
memo, so a vector written by another process is never served stale.

``VectorCache.top`` scores every row with one BLAS matrix-vector product,
which is within float32 rounding of the per-row score, keeps every row that
could be among the best, and rescores exactly those the per-row way. The
result is the per-row ranking itself, not an approximation (decisions 0037
and 0041: an int8 copy of the rows was tried for the coarse pass and was
slower than the float32 product, quiet or loaded).
"""

from __future__ import annotations

import asyncio
import hashlib
import threading

import numpy as np
import numpy.typing as npt

from app.search.embedder import Vectors

_F16 = np.dtype("<f2")
EXACT_BELOW = 8192  # ``top`` scores this few live rows the exact way at once


def rounding_bound(dim: int) -> float:
    """How far two float32 dot products of the same ``dim``-vectors, summed in
    different orders, can differ, per unit of ``|q| |v|``: each errs by at most
    ``dim * 2**-24`` (to first order; 2.3e-5 at 384 dimensions), so twice that,
    with 10% on top for the second-order terms and the products' own rounding."""
    return 2.2 * dim * 2.0**-24


def one_blas_thread() -> None:
    """numpy's BLAS on one thread for this process (the search runtime calls it).

    A query's matrix-vector products are memory-bound and small per step: on
    two threads of a shared 2-core machine OpenBLAS spent several times the CPU
    of one thread for the same product (``top``'s coarse pass: 135 ms of CPU
    for 100k rows instead of 3; decision 0037), and the event loop and the
    ONNX thread need the other core."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def similarities(rows: Vectors, query: Vectors) -> npt.NDArray[np.float32]:
    """The dot product of each row with ``query``, computed the same way for a row
    wherever it sits: OpenBLAS's matrix-vector kernel rounds a row differently
    by its position in the block (equal vectors came out a last bit apart
    between the walk and the exact scan, so ties at a cut depended on the
    path); ``einsum``'s loop gives each row one result."""
    out: npt.NDArray[np.float32] = np.einsum("ij,j->i", rows, query)
    return out


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

    exact_below = EXACT_BELOW

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._row_of = np.full(1024, -1, dtype=np.int64)
        self._key_of = np.zeros(1024, dtype=np.int64)
        self._id_of = np.full(1024, -1, dtype=np.int64)  # memo id per row; -1: free
        self._matrix: Vectors = np.zeros((1024, dim), dtype=np.float32)
        # the largest row norm stored (``top``'s rounding bound scales with it)
        self._peak_norm = 0.0
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

    def _note_norms(self, vectors: Vectors) -> None:
        v = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        if len(v):
            self._peak_norm = max(self._peak_norm, float(np.sqrt((v * v).sum(axis=1).max())))

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
            self._note_norms(vector)
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
                self._note_norms(vectors)
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
        scores = similarities(self._matrix[:used], query)
        return ids[live], scores[live]

    def sample(self, count: int) -> list[int]:
        """``count`` live memo ids spread evenly over the rows (all when fewer)."""
        live = self._id_of[: self._used]
        live = live[live >= 0]
        if len(live) > count:
            live = live[np.linspace(0, len(live) - 1, count).astype(np.int64)]
        return [int(i) for i in live]

    def top(
        self, query: Vectors, count: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Every cached vector whose score is at least the ``count``-th best (ties
        at the cut included), as ``(ids, scores)`` in no particular order:
        exactly what ``score_all`` followed by a cut at the ``count``-th score
        gives (``similarities`` scores a row the same wherever it sits).

        The coarse pass is one BLAS product over every row (the fastest way to
        read the matrix: 9 ms for 100k x 384 on one core of the 2-core machine,
        against 10 ms for ``einsum`` and 13 ms for the int8 copy decision 0037
        kept). BLAS sums in a different order than ``similarities``, so its score
        is within ``e`` (float32 rounding: ``rounding_bound`` per unit of
        ``|q| |v|``) of the exact one. The ``count``-th best lower bound ``L`` is
        at most the true ``count``-th best score, so every row of the true cut
        has an upper bound of at least ``L``: those candidates (the cut and
        near-ties) are rescored the exact way and cut.
        """
        used = self._used
        ids = self._id_of[:used]
        live = np.nonzero(ids >= 0)[0]
        if count <= 0 or not len(live):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if len(live) <= max(count, self.exact_below):
            rows = live
        else:
            q = np.asarray(query, dtype=np.float32)
            coarse = np.matmul(self._matrix[:used], q)[live]
            error = np.float32(
                rounding_bound(self.dim) * float(np.linalg.norm(q)) * self._peak_norm + 1e-7
            )
            bar = np.partition(coarse, len(coarse) - count)[len(coarse) - count] - error
            rows = live[coarse + error >= bar]
        scores = similarities(self._matrix[rows], query)
        if len(rows) > count:
            cut = np.partition(scores, len(scores) - count)[len(scores) - count]
            keep = scores >= cut
            rows, scores = rows[keep], scores[keep]
        return self._id_of[rows], scores

    def scores(self, rows: npt.NDArray[np.int64], query: Vectors) -> npt.NDArray[np.float32]:
        """Cosine similarity of ``query`` with the given rows.

        For a large share of the cache one product over the whole matrix and a
        gather of the scores is cheaper than gathering the rows first.
        """
        if len(rows) == 0:
            return np.zeros(0, dtype=np.float32)
        matrix = self._matrix
        if len(rows) * 4 > self._used:
            return similarities(matrix[: self._used], query)[rows]
        return similarities(matrix[rows], query)
