"""SpaceService: spaces, invitations and members.

Roster and settings changes are the management plane (a restricted key gets
403); reading a space or its roster is allowed to a key that declares it.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, delete, get, patch, post
from litestar.di import Provide
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.api.paging import page_size as clamp_page_size
from app.api.params import PageSize, PageToken
from app.api.responses import errors
from app.deps import management_plane, requires_user
from app.errors import Unauthenticated
from app.settings import Settings
from app.spaces import members, schemas, service
from app.spaces.service import SpaceContext, space_uid

SpaceName = Annotated[str, Parameter(description="space id or name (spaces/{id})", max_length=64)]
UserName = Annotated[str, Parameter(description="username", max_length=80)]
Mask = Annotated[str | None, Parameter(query="updateMask", max_length=512)]
MaskSnake = Annotated[str | None, Parameter(query="update_mask", max_length=512)]


def provide_space_context(caller: Caller | None, now: int, settings: Settings) -> SpaceContext:
    """Who acts, when, and the secret that signs page tokens: what every space call needs."""
    if caller is None:
        raise Unauthenticated("authentication required")
    return SpaceContext(caller, now, settings.secret)


SPACE_DEPENDENCIES = {"space_ctx": Provide(provide_space_context, sync_to_thread=False)}


class SpaceController(Controller):
    path = "/api/v1/spaces"
    tags = ("SpaceService",)
    guards = (requires_user,)
    dependencies = SPACE_DEPENDENCIES

    @get("", operation_id="SpaceService_ListSpaces", responses=errors())
    async def list_spaces(
        self,
        db: AsyncConnection,
        space_ctx: SpaceContext,
        page_size: PageSize = None,
        page_token: PageToken = None,
        member_state: Annotated[str | None, Parameter(query="state", max_length=16)] = None,
    ) -> schemas.ListSpacesResponse:
        return await service.list_spaces(
            db,
            space_ctx,
            (member_state or "ACTIVE").upper(),
            clamp_page_size(page_size),
            page_token or None,
        )

    @post(
        "",
        operation_id="SpaceService_CreateSpace",
        status_code=200,
        guards=[management_plane],
        responses=errors(409),
    )
    async def create_space(
        self,
        db: AsyncConnection,
        space_ctx: SpaceContext,
        data: schemas.SpaceIn,
        space_id: Annotated[str | None, Parameter(query="spaceId", max_length=64)] = None,
    ) -> schemas.Space:
        return await service.create_space(db, space_ctx, data, space_id or None)

    @get("/{space:str}", operation_id="SpaceService_GetSpace", responses=errors())
    async def get_space(
        self, db: AsyncConnection, space_ctx: SpaceContext, space: SpaceName
    ) -> schemas.Space:
        row, seat = await service.member_space(db, space_ctx.caller, space_uid(space))
        return await service.present_space(db, row, seat.role, seat.state)

    @patch(
        "/{space:str}",
        operation_id="SpaceService_UpdateSpace",
        guards=[management_plane],
        responses=errors(),
    )
    async def update_space(
        self,
        db: AsyncConnection,
        space_ctx: SpaceContext,
        space: SpaceName,
        data: schemas.SpaceIn,
        update_mask: Mask = None,
        update_mask_snake: MaskSnake = None,
    ) -> schemas.Space:
        paths = service.space_mask(
            update_mask if update_mask is not None else update_mask_snake, data
        )
        return await service.update_space(db, space_ctx, space_uid(space), data, paths)

    @delete(
        "/{space:str}",
        operation_id="SpaceService_DeleteSpace",
        status_code=200,
        guards=[management_plane],
        responses=errors(),
    )
    async def delete_space(
        self, db: AsyncConnection, space_ctx: SpaceContext, space: SpaceName
    ) -> dict[str, Any]:
        await service.delete_space(db, space_ctx, space_uid(space))
        return {}

    @post(
        "/{space:str}/invitations",
        operation_id="SpaceService_CreateInvitation",
        status_code=200,
        guards=[management_plane],
        responses=errors(409, 412),
    )
    async def create_invitation(
        self,
        db: AsyncConnection,
        space_ctx: SpaceContext,
        space: SpaceName,
        data: schemas.InvitationIn,
    ) -> schemas.Member:
        return await members.invite(db, space_ctx, space_uid(space), data)

    @post(
        "/{space:str}/invitations/{username:str}/:accept",
        operation_id="SpaceService_AcceptInvitation",
        status_code=200,
        guards=[management_plane],
        responses=errors(),
    )
    async def accept_invitation(
        self,
        db: AsyncConnection,
        space_ctx: SpaceContext,
        space: SpaceName,
        username: UserName,
    ) -> schemas.Member:
        return await members.accept(db, space_ctx, space_uid(space), username)

    @post(
        "/{space:str}/invitations/{username:str}/:decline",
        operation_id="SpaceService_DeclineInvitation",
        status_code=200,
        guards=[management_plane],
        responses=errors(),
    )
    async def decline_invitation(
        self,
        db: AsyncConnection,
        space_ctx: SpaceContext,
        space: SpaceName,
        username: UserName,
    ) -> dict[str, Any]:
        await members.decline(db, space_ctx, space_uid(space), username)
        return {}

    @delete(
        "/{space:str}/invitations/{username:str}",
        operation_id="SpaceService_RevokeInvitation",
        status_code=200,
        guards=[management_plane],
        responses=errors(),
    )
    async def revoke_invitation(
        self,
        db: AsyncConnection,
        space_ctx: SpaceContext,
        space: SpaceName,
        username: UserName,
    ) -> dict[str, Any]:
        await members.revoke(db, space_ctx, space_uid(space), username)
        return {}

    @get("/{space:str}/members", operation_id="SpaceService_ListMembers", responses=errors())
    async def list_members(
        self,
        db: AsyncConnection,
        space_ctx: SpaceContext,
        space: SpaceName,
        page_size: PageSize = None,
        page_token: PageToken = None,
    ) -> schemas.ListMembersResponse:
        return await members.list_members(
            db,
            space_ctx,
            space_uid(space),
            clamp_page_size(page_size),
            page_token or None,
        )

    @patch(
        "/{space:str}/members/{username:str}",
        operation_id="SpaceService_UpdateMember",
        guards=[management_plane],
        responses=errors(409),
    )
    async def update_member(
        self,
        db: AsyncConnection,
        space_ctx: SpaceContext,
        space: SpaceName,
        username: UserName,
        data: schemas.MemberIn,
    ) -> schemas.Member:
        return await members.update_member(db, space_ctx, space_uid(space), username, data)

    @delete(
        "/{space:str}/members/{username:str}",
        operation_id="SpaceService_DeleteMember",
        status_code=200,
        guards=[management_plane],
        responses=errors(409),
    )
    async def delete_member(
        self,
        db: AsyncConnection,
        space_ctx: SpaceContext,
        space: SpaceName,
        username: UserName,
    ) -> dict[str, Any]:
        await members.remove_member(db, space_ctx, space_uid(space), username)
        return {}
