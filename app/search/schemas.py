"""The search response at the edge."""

from __future__ import annotations

from app.api.structs import Out
from app.memos.schemas import Memo


class SearchResult(Out):
    memo: Memo
    score: float  # the RRF score (or 1/(60+rank) in a single-arm mode)
    lexical_rank: int  # 1-based rank in the lexical arm; 0 when not ranked there
    semantic_rank: int  # 1-based rank in the semantic arm; 0 when not ranked there


class SearchMemosResponse(Out):
    results: list[SearchResult]
    next_page_token: str = ""
    pending_embeddings: int = 0  # admitted memos still waiting for a vector of the current model
