"""``GET /api/v1/memos:search`` (routed as ``/api/v1/memos/:search``, see ``app.server``)."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get
from litestar.datastructures import State
from litestar.params import Parameter

from app.api.context import RequestContext
from app.api.paging import page_size as clamp_page_size
from app.api.params import FilterText, PageSize, PageToken
from app.api.responses import errors
from app.errors import Unauthenticated
from app.memos.present import present
from app.memos.query_filter import memo_filter_clause
from app.memos.schemas import Memo
from app.search import schemas
from app.search.explain import Explanation
from app.search.fusion import Fused
from app.search.service import DEFAULT_PAGE, SearchQuery, search_memos, validate


class SearchController(Controller):
    path = "/api/v1/memos"
    tags = ("MemoService",)

    @get("/:search", operation_id="MemoService_SearchMemos", responses=errors())
    async def search_memos(
        self,
        ctx: RequestContext,
        state: State,
        text: Annotated[str | None, Parameter(query="query")] = None,
        mode: Annotated[str | None, Parameter(query="mode", max_length=32)] = None,
        filter: FilterText = None,
        page_size: PageSize = None,
        page_token: PageToken = None,
        pool_size: Annotated[int | None, Parameter(query="poolSize", ge=-(2**31), le=2**31)] = None,
    ) -> schemas.SearchMemosResponse:
        """Memos ranked by relevance: full-text and embeddings, fused; the semantic arm
        adds only neighbours above its relevance floor, so a query with no good match
        returns no results and ``noRelevantMatch: true``."""
        if ctx.caller is None and ctx.mode.value == "PRIVATE":
            raise Unauthenticated("sign in to search memos on this instance")
        db = ctx.db
        query_text, chosen, pool = validate(text, mode, pool_size)
        q = SearchQuery(
            caller=ctx.caller,
            access_mode=ctx.mode,
            text=query_text,
            mode=chosen,
            filter_text=filter,
            filter_clause=await memo_filter_clause(db, filter, now=ctx.now),
            pool=pool,
            page_size=clamp_page_size(page_size) if page_size else DEFAULT_PAGE,
            page_token=page_token or None,
        )
        page = await search_memos(db, state.search, q, ctx.settings.secret)
        rows = [page.rows[h.memo_id] for h in page.hits]
        memos = await present(db, rows, q.caller, q.access_mode)
        return schemas.SearchMemosResponse(
            results=[
                result(h, m, page.explanations[h.memo_id])
                for h, m in zip(page.hits, memos, strict=True)
            ],
            next_page_token=page.next_token,
            pending_embeddings=page.pending,
            total_size=page.total,
            total_is_exact=page.total_is_exact,
            no_relevant_match=page.total == 0,
            semantic_floor=page.floor,
        )


def result(hit: Fused, memo: Memo, why: Explanation) -> schemas.SearchResult:
    content = memo.content
    return schemas.SearchResult(
        memo=memo,
        score=hit.score,
        lexical_rank=hit.lexical_rank,
        semantic_rank=hit.semantic_rank,
        matched_by=why.matched_by,
        similarity=round(hit.similarity, 6),
        matched_terms=list(why.terms),
        highlights=[schemas.TextSpan(start=s.start, end=s.end) for s in why.highlights],
        snippet=schemas.Snippet(
            start=why.snippet.start,
            end=why.snippet.end,
            text=content[why.snippet.start : why.snippet.end],
        ),
    )
