"""``POST /api/v1/memos:batchCreate`` (routed as ``/api/v1/memos/:batchCreate``, see server)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, post
from litestar.datastructures import State

from app.api.context import RequestContext, writable_key
from app.api.responses import errors
from app.db import statistics
from app.deps import requires_user
from app.errors import IdUnavailable, InvalidArgument
from app.memos import chosen_ids
from app.memos.batch import BatchCreateMemosRequest, BatchCreateMemosResponse, batch_create


class MemoBatchController(Controller):
    path = "/api/v1/memos"
    tags = ("MemoService",)

    @post(
        "/:batchCreate",
        operation_id="MemoService_BatchCreateMemos",
        status_code=200,
        guards=[requires_user, writable_key],
        responses=errors(409, 413),
    )
    async def batch_create_memos(
        self,
        request: Request[Any, Any, Any],
        state: State,
        ctx: RequestContext,
        data: BatchCreateMemosRequest,
    ) -> BatchCreateMemosResponse:
        """Create up to 1000 memos at once, all or nothing, keyed by each input's ``memoId``.

        Attachments and relations are not bound here (a batch would have to
        check each against its own memo): naming any is a 400, never dropped.
        """
        for i, item in enumerate(data.memos):
            for field in ("attachments", "relations"):
                if getattr(item, field):  # UNSET and [] are falsy
                    raise InvalidArgument(
                        f"memos[{i}].{field}: not bound by batchCreate; create the memo, "
                        f"then set its {field} (UpdateMemo or SetMemo{field.title()})"
                    )
        if any(_chosen(item) for item in data.memos):
            await chosen_ids.refuse_if_throttled(state.engine, ctx.user, ctx.now)
        try:
            created = await batch_create(ctx.db, ctx.write, data)
        except IdUnavailable:
            chosen_ids.mark_unavailable(request.scope, ctx.user)
            raise
        if len(data.memos) >= statistics.BATCH_ROWS:
            statistics.nudge(state)  # checked once this transaction has committed
        return created


def _chosen(item: Any) -> bool:
    return bool(getattr(item, "memo_id", None) or getattr(item, "name", None))
