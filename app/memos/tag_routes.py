"""``POST /api/v1/memos/-/tags:rename`` and ``POST /api/v1/memos/-/tags:delete``.

Routed as ``/api/v1/memos/-/tags/:rename`` (the custom-method rewrite in
:mod:`app.server`). See :mod:`app.memos.tag_ops` for what they change.
"""

from __future__ import annotations

from litestar import Controller, post

from app.api.context import RequestContext, writable_key
from app.api.responses import errors
from app.deps import requires_user
from app.memos.tag_ops import DeleteTagIn, RenameTagIn, TagRewrite, normal_tag, rewrite_tag


class TagController(Controller):
    path = "/api/v1/memos/-/tags"
    tags = ("MemoService",)
    guards = [requires_user, writable_key]  # noqa: RUF012 (Litestar's declared layer attribute)

    @post(
        "/:rename",
        operation_id="MemoService_RenameMemoTag",
        status_code=200,
        responses=errors(),
    )
    async def rename_tag(self, ctx: RequestContext, data: RenameTagIn) -> TagRewrite:
        """Rename (or merge into an existing tag) ``oldTag`` and its sub-tags in your memos.

        At most 200 memos per call, in one transaction; repeat while ``remaining`` > 0.
        """
        old = normal_tag(data.old_tag, "oldTag")
        new = normal_tag(data.new_tag, "newTag")
        return await rewrite_tag(ctx.db, ctx.write, old, new)

    @post(
        "/:delete",
        operation_id="MemoService_DeleteMemoTag",
        status_code=200,
        responses=errors(),
    )
    async def delete_tag(self, ctx: RequestContext, data: DeleteTagIn) -> TagRewrite:
        """Un-tag ``tag`` and its sub-tags in your memos (``#work`` becomes ``work``).

        At most 200 memos per call, in one transaction; repeat while ``remaining`` > 0.
        """
        tag = normal_tag(data.tag, "tag")
        return await rewrite_tag(ctx.db, ctx.write, tag, None)
