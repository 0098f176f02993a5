"""The search response at the edge.

Fields added by issue 18 (decision 0016) are additive: a client that knows
only ``results[].memo/score/lexicalRank/semanticRank``, ``nextPageToken`` and
``pendingEmbeddings`` reads the response as before. Offsets are indices into
``memo.content`` in Unicode code points (not UTF-16 units), end exclusive.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from app.api.structs import Out
from app.memos.schemas import Memo

_OFFSET = "An index into memo.content in Unicode code points (not UTF-16 units)."


class TextSpan(Out):
    """``memo.content[start:end]``, in Unicode code points, end exclusive."""

    start: Annotated[int, msgspec.Meta(description=_OFFSET)]
    end: Annotated[int, msgspec.Meta(description=_OFFSET + " Exclusive.")]


class Snippet(Out):
    """The part of the memo to show: a window around the densest run of
    highlights, or for a semantic-only hit the sentence most similar to the query."""

    start: Annotated[int, msgspec.Meta(description=_OFFSET)]
    end: Annotated[int, msgspec.Meta(description=_OFFSET + " Exclusive.")]
    text: Annotated[
        str,
        msgspec.Meta(
            description=(
                "memo.content[start:end]: around the densest highlights, or for a "
                "SEMANTIC hit the sentence most similar to the query."
            )
        ),
    ]


class SearchResult(Out):
    memo: Memo
    score: Annotated[
        float,
        msgspec.Meta(
            description=(
                "The fused relevance score (higher is better); compare within one response only."
            )
        ),
    ]
    lexical_rank: Annotated[
        int, msgspec.Meta(description="1-based rank in the lexical arm; 0 when not ranked there.")
    ]
    semantic_rank: Annotated[
        int,
        msgspec.Meta(
            description=(
                "1-based rank in the semantic arm; 0 when not ranked there or below the relevance "
                "floor."
            )
        ),
    ]
    matched_by: Annotated[
        Literal["LEXICAL", "SEMANTIC", "BOTH"],
        msgspec.Meta(description="Which arm(s) found this memo."),
    ]
    similarity: Annotated[
        float,
        msgspec.Meta(
            description="Cosine similarity with the query; 0 when not ranked semantically."
        ),
    ]
    matched_terms: Annotated[
        list[str],
        msgspec.Meta(description="The query's words (or CJK bigrams) the memo contains."),
    ]
    highlights: Annotated[
        list[TextSpan],
        msgspec.Meta(
            description="Where the query's words occur in memo.content (at most 64 spans)."
        ),
    ]
    snippet: Snippet


class SearchMemosResponse(Out):
    results: list[SearchResult]
    next_page_token: str = ""
    pending_embeddings: Annotated[
        int,
        msgspec.Meta(description="Admitted memos still waiting for a vector of the current model."),
    ] = 0
    total_size: Annotated[
        int,
        msgspec.Meta(
            description=(
                "Relevant hits under the caller's audience, on every page (hidden memos are never "
                "counted)."
            )
        ),
    ] = 0
    total_is_exact: Annotated[
        bool,
        msgspec.Meta(
            description="False when an arm filled its candidate pool, so more memos may match."
        ),
    ] = True
    no_relevant_match: Annotated[
        bool,
        msgspec.Meta(
            description=(
                "True when nothing matched the query's words and no memo was close enough in "
                "meaning."
            )
        ),
    ] = False
    semantic_floor: Annotated[
        float,
        msgspec.Meta(
            description=(
                "The cosine similarity a semantic neighbour needed for this query (-1: no floor)."
            )
        ),
    ] = -1.0
