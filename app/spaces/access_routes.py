"""SpaceService endpoints for groups, tree grants and the caller's effective access.

Group and grant mutations are the management plane (a restricted key gets
403); the lists are reads, and ``…/access`` is what an agent asks first, so
a key that declares the space may call it.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, delete, get, post
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncConnection

from app.api.responses import errors
from app.deps import management_plane, requires_user
from app.spaces import grants, groups, schemas
from app.spaces.routes import SPACE_DEPENDENCIES, SpaceName, UserName
from app.spaces.service import SpaceContext, space_uid

GroupId = Annotated[str, Parameter(description="group id", max_length=16)]
GrantId = Annotated[str, Parameter(description="grant id", max_length=16)]


class SpaceAccessController(Controller):
    path = "/api/v1/spaces/{space:str}"
    tags = ("SpaceService",)
    guards = (requires_user,)
    dependencies = SPACE_DEPENDENCIES

    @get("/groups", operation_id="SpaceService_ListGroups", responses=errors())
    async def list_groups(
        self, db: AsyncConnection, space_ctx: SpaceContext, space: SpaceName
    ) -> schemas.ListGroupsResponse:
        return await groups.list_groups(db, space_ctx, space_uid(space))

    @post(
        "/groups",
        operation_id="SpaceService_CreateGroup",
        status_code=200,
        guards=[management_plane],
        responses=errors(),
    )
    async def create_group(
        self,
        db: AsyncConnection,
        space_ctx: SpaceContext,
        space: SpaceName,
        data: schemas.GroupIn,
    ) -> schemas.Group:
        return await groups.create_group(db, space_ctx, space_uid(space), data)

    @get(
        "/groups/{group:str}/members",
        operation_id="SpaceService_ListGroupMembers",
        responses=errors(),
    )
    async def list_group_members(
        self,
        db: AsyncConnection,
        space_ctx: SpaceContext,
        space: SpaceName,
        group: GroupId,
    ) -> schemas.ListGroupMembersResponse:
        return await groups.list_group_members(db, space_ctx, space_uid(space), group)

    @post(
        "/groups/{group:str}/members",
        operation_id="SpaceService_AddGroupMember",
        status_code=200,
        guards=[management_plane],
        responses=errors(409, 412),
    )
    async def add_group_member(
        self,
        db: AsyncConnection,
        space_ctx: SpaceContext,
        space: SpaceName,
        group: GroupId,
        data: schemas.GroupMemberIn,
    ) -> schemas.GroupMember:
        return await groups.add_group_member(db, space_ctx, space_uid(space), group, data)

    @delete(
        "/groups/{group:str}/members/{username:str}",
        operation_id="SpaceService_RemoveGroupMember",
        status_code=200,
        guards=[management_plane],
        responses=errors(),
    )
    async def remove_group_member(
        self,
        db: AsyncConnection,
        space_ctx: SpaceContext,
        space: SpaceName,
        group: GroupId,
        username: UserName,
    ) -> dict[str, Any]:
        await groups.remove_group_member(db, space_ctx, space_uid(space), group, username)
        return {}

    @get("/grants", operation_id="SpaceService_ListGrants", responses=errors())
    async def list_grants(
        self, db: AsyncConnection, space_ctx: SpaceContext, space: SpaceName
    ) -> schemas.ListGrantsResponse:
        return await grants.list_grants(db, space_ctx, space_uid(space))

    @post(
        "/grants",
        operation_id="SpaceService_CreateGrant",
        status_code=200,
        guards=[management_plane],
        responses=errors(412),
    )
    async def create_grant(
        self,
        db: AsyncConnection,
        space_ctx: SpaceContext,
        space: SpaceName,
        data: schemas.GrantIn,
    ) -> schemas.Grant:
        return await grants.create_grant(db, space_ctx, space_uid(space), data)

    @delete(
        "/grants/{grant:str}",
        operation_id="SpaceService_DeleteGrant",
        status_code=200,
        guards=[management_plane],
        responses=errors(),
    )
    async def delete_grant(
        self,
        db: AsyncConnection,
        space_ctx: SpaceContext,
        space: SpaceName,
        grant: GrantId,
    ) -> dict[str, Any]:
        await grants.delete_grant(db, space_ctx, space_uid(space), grant)
        return {}

    @get("/access", operation_id="SpaceService_GetAccess", responses=errors())
    async def get_access(
        self, db: AsyncConnection, space_ctx: SpaceContext, space: SpaceName
    ) -> schemas.Access:
        return await grants.get_access(db, space_ctx, space_uid(space))
