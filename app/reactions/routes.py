"""MemoService_ListMemoReactions / UpsertMemoReaction / DeleteMemoReaction."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, delete, get, post
from litestar.params import Parameter

from app.api.bounds import Label, Name
from app.api.context import RequestContext, writable_key
from app.api.responses import errors
from app.api.structs import In, Out
from app.deps import requires_user
from app.errors import InvalidArgument
from app.memos.lookup import MemoName, memo_uid, readable_memo
from app.memos.schemas import Reaction
from app.reactions.service import delete_reaction, list_reactions, upsert_reaction


class ReactionIn(In):
    content_id: Name = ""
    reaction_type: Label = ""


class UpsertMemoReactionRequest(In):
    """Memos' ``{reaction: {contentId, reactionType}}``, or a bare ``{reactionType}``."""

    reaction: ReactionIn | None = None
    reaction_type: Label = ""
    name: Any = msgspec.UNSET  # the memo's name, sent by Memos clients; the path wins


class ListMemoReactionsResponse(Out):
    reactions: list[Reaction]
    next_page_token: str = ""
    total_size: int = 0


class ReactionController(Controller):
    path = "/api/v1/memos/{memo:str}/reactions"
    tags = ("MemoService",)

    @get("", operation_id="MemoService_ListMemoReactions", responses=errors())
    async def list_reactions(
        self, ctx: RequestContext, memo: MemoName
    ) -> ListMemoReactionsResponse:
        row = await readable_memo(ctx.db, memo, ctx.caller, ctx.mode)
        found = await list_reactions(ctx.db, row)
        return ListMemoReactionsResponse(reactions=found, total_size=len(found))

    @post(
        "",
        operation_id="MemoService_UpsertMemoReaction",
        status_code=200,
        guards=[requires_user, writable_key],
        responses=errors(),
    )
    async def upsert_reaction(
        self, ctx: RequestContext, memo: MemoName, data: UpsertMemoReactionRequest
    ) -> Reaction:
        row = await readable_memo(ctx.db, memo, ctx.user, ctx.mode)
        body = data.reaction or ReactionIn(reaction_type=data.reaction_type)
        if body.content_id and memo_uid(body.content_id, "reaction.contentId") != row.uid:
            raise InvalidArgument("reaction.contentId: names a different memo than the path")
        return await upsert_reaction(ctx.db, ctx.user, row, body.reaction_type, ctx.now)

    @delete(
        "/{reaction:str}",
        operation_id="MemoService_DeleteMemoReaction",
        status_code=200,
        guards=[requires_user, writable_key],
        responses=errors(),
    )
    async def delete_reaction(
        self,
        ctx: RequestContext,
        memo: MemoName,
        reaction: Annotated[str, Parameter(max_length=32)],
    ) -> dict[str, Any]:
        row = await readable_memo(ctx.db, memo, ctx.user, ctx.mode)
        if not (reaction.isascii() and reaction.isdigit()) or not 0 < int(reaction) < 2**31:
            raise InvalidArgument(f"reaction: {reaction!r} is not a reaction id")
        await delete_reaction(ctx.db, ctx.user, row, int(reaction))
        return {}
