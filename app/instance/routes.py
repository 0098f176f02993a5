"""InstanceService: the public profile and the admin's settings."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Controller, get, patch
from litestar.datastructures import State
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncConnection

from app import __version__
from app.access.audience import AccessMode
from app.access.caller import Caller
from app.api.bounds import Enum
from app.api.responses import errors
from app.api.structs import In, Out
from app.deps import management_plane, requires_user
from app.errors import InvalidArgument, NotFound, PermissionDenied
from app.instance.store import ACCESS, AccessSettings, replace, save_access
from app.users.service import user_count


class InstanceProfile(Out):
    version: str
    mode: str
    access_mode: str
    allow_registration: bool
    disallow_public_visibility: bool
    initialized: bool  # false until the first user signs up


class AccessSetting(Out):
    name: str
    access_mode: str
    disallow_public_visibility: bool
    allow_registration: bool
    content_length_limit: int


class AccessSettingIn(In):
    access_mode: Enum | msgspec.UnsetType = msgspec.UNSET
    disallow_public_visibility: bool | msgspec.UnsetType = msgspec.UNSET
    allow_registration: bool | msgspec.UnsetType = msgspec.UNSET
    content_length_limit: int | msgspec.UnsetType = msgspec.UNSET


def _setting_out(value: AccessSettings) -> AccessSetting:
    return AccessSetting(
        name=f"instance/settings/{ACCESS}",
        access_mode=value.access_mode.value,
        disallow_public_visibility=value.disallow_public_visibility,
        allow_registration=value.allow_registration,
        content_length_limit=value.content_length_limit,
    )


def _known(setting: str) -> None:
    if setting.removeprefix("instance/settings/") != ACCESS:
        raise NotFound(f"instance setting {setting!r} not found")


class InstanceController(Controller):
    path = "/api/v1/instance"
    tags = ("InstanceService",)

    @get("/profile", operation_id="InstanceService_GetInstanceProfile", responses=errors())
    async def profile(self, db: AsyncConnection, access: AccessSettings) -> InstanceProfile:
        return InstanceProfile(
            version=__version__,
            mode="prod",
            access_mode=access.access_mode.value,
            allow_registration=access.allow_registration,
            disallow_public_visibility=access.disallow_public_visibility,
            initialized=await user_count(db) > 0,
        )

    @get(
        "/settings/{setting:str}",
        operation_id="InstanceService_GetInstanceSetting",
        guards=[requires_user, management_plane],
        responses=errors(),
    )
    async def get_setting(
        self,
        caller: Caller,
        access: AccessSettings,
        setting: Annotated[str, Parameter(max_length=64)],
    ) -> AccessSetting:
        if not caller.is_admin:
            raise PermissionDenied("only an admin can read instance settings")
        _known(setting)
        return _setting_out(access)

    @patch(
        "/settings/{setting:str}",
        operation_id="InstanceService_UpdateInstanceSetting",
        guards=[requires_user, management_plane],
        responses=errors(),
    )
    async def update_setting(
        self,
        db: AsyncConnection,
        caller: Caller,
        access: AccessSettings,
        state: State,
        setting: Annotated[str, Parameter(max_length=64)],
        data: AccessSettingIn,
    ) -> AccessSetting:
        if not caller.is_admin:
            raise PermissionDenied("only an admin can change instance settings")
        _known(setting)
        value = access
        if isinstance(data.access_mode, str):
            try:
                value = replace(value, access_mode=AccessMode(data.access_mode))
            except ValueError:
                raise InvalidArgument(
                    f"accessMode: {data.access_mode!r} is not one of PRIVATE, PUBLIC"
                ) from None
        if isinstance(data.disallow_public_visibility, bool):
            value = replace(value, disallow_public_visibility=data.disallow_public_visibility)
        if isinstance(data.allow_registration, bool):
            value = replace(value, allow_registration=data.allow_registration)
        if isinstance(data.content_length_limit, int):
            if not 1 <= data.content_length_limit <= 1024 * 1024:
                raise InvalidArgument("contentLengthLimit: must be between 1 and 1048576 bytes")
            value = replace(value, content_length_limit=data.content_length_limit)
        await save_access(db, value)
        # Memo routes' body limit (app.api.body_limits) widens with a raised content limit.
        if value.content_length_limit > getattr(state, "content_length_seen", 0):
            state.content_length_seen = value.content_length_limit
        return _setting_out(value)
