"""``GET /api/v1/memos/{memo}/history:diff`` and ``POST /api/v1/memos/{memo}:revert``.

- ``MemoService_DiffMemoHistory``: ``?from=V&to=W`` (``to`` defaults to the
  newest version) → ``{name, fromVersion, toVersion, contentDiff,
  changedFields: [{field, from, to}]}``; ``contentDiff`` is a unified diff
  (``--- memos/{uid}@V`` / ``+++ memos/{uid}@W``), empty when the contents
  are equal. Readable exactly when both versions are in the caller's history.
- ``MemoService_RevertMemo``: body ``{version: V}``, optional ``If-Match``;
  answers the Memo at its new version (history kind ``REVERT``), or the Memo
  unchanged when version V already matches it.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Response, get, post
from litestar.params import Parameter

from app.api.context import RequestContext, writable_key
from app.api.responses import errors
from app.api.structs import In
from app.deps import requires_user
from app.memos.lookup import MemoName, memo_uid, readable_memo, written_memo
from app.memos.present import present_one
from app.memos.revert import MemoDiff, diff_versions, find_versions, parse_version, revert_memo
from app.memos.schemas import Memo


class RevertIn(In):
    version: Any = None


class MemoRevertController(Controller):
    path = "/api/v1/memos/{memo:str}"
    tags = ("MemoService",)

    @get("/history/:diff", operation_id="MemoService_DiffMemoHistory", responses=errors())
    async def diff(
        self,
        ctx: RequestContext,
        memo: MemoName,
        from_version: Annotated[int, Parameter(query="from", ge=1, le=2**31)],
        to_version: Annotated[int | None, Parameter(query="to", ge=1, le=2**31)] = None,
    ) -> MemoDiff:
        """Unified diff of the content and the changed fields between two versions."""
        uid = memo_uid(memo)
        found = await find_versions(
            ctx.db, uid, ctx.caller, ctx.mode, ctx.settings.secret, {from_version, to_version}
        )
        return diff_versions(uid, found[from_version], found[to_version])

    @post(
        "/:revert",
        operation_id="MemoService_RevertMemo",
        guards=[requires_user, writable_key],
        status_code=200,
        responses=errors(412),
    )
    async def revert(
        self,
        ctx: RequestContext,
        memo: MemoName,
        data: RevertIn,
        if_match: Annotated[str | None, Parameter(header="If-Match", max_length=128)] = None,
    ) -> Response[Memo]:
        """Make version ``version`` current again, as a new version."""
        version = parse_version(data.version, "version")
        db = ctx.db
        row = await readable_memo(db, memo, ctx.user, ctx.mode)
        await revert_memo(db, ctx.write, row, version, if_match, ctx.settings.secret)
        live = await written_memo(db, row.id)
        out = await present_one(db, live, ctx.user, ctx.mode)
        return Response(out, headers={"ETag": out.etag})
