"""User settings (Memos 0.31 ``users/{u}/settings[/{s}]``): GENERAL only.

GENERAL holds a user's locale, theme ("appearance" before Memos 0.24) and the
visibility its client preselects for new memos. Clients apply them; the
server only keeps them. Other Memos keys (TAGS, WEBHOOKS) are not settings in
Daybook and answer 404.

The values live in the key-value ``instance_setting`` table under
``user:{id}:GENERAL`` (read and written by ``app.users.settings_service``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec
from litestar import Controller, get, patch
from litestar.params import Parameter

from app.access.caller import Caller
from app.api.bounds import Enum
from app.api.context import RequestContext, writable_key
from app.api.responses import errors
from app.api.structs import In, Out, resource_id
from app.deps import management_plane, requires_user
from app.errors import InvalidArgument, NotFound, PermissionDenied
from app.users.settings_service import GENERAL, load_general, save_general

VISIBILITIES = ("PRIVATE", "PROTECTED", "PUBLIC")
_LOCALE = re.compile(r"[A-Za-z]{2,8}(?:[-_][A-Za-z0-9]{1,8}){0,3}\Z")
_THEME = re.compile(r"[a-z0-9][a-z0-9-]{0,31}\Z")
MASK = {
    "locale": "locale",
    "theme": "theme",
    "appearance": "theme",
    "memovisibility": "memoVisibility",
    "savemediametadata": "saveMediaMetadata",
}

UserName = Annotated[str, Parameter(max_length=80)]
SettingName = Annotated[str, Parameter(max_length=64)]


class GeneralSetting(Out):
    locale: str
    theme: str
    memo_visibility: str
    save_media_metadata: bool
    appearance: str  # the pre-0.24 name of theme


class UserSetting(Out):
    name: str
    general_setting: GeneralSetting


class ListUserSettingsResponse(Out):
    settings: list[UserSetting]
    next_page_token: str = ""


class GeneralSettingIn(In):
    locale: Enum | msgspec.UnsetType = msgspec.UNSET
    theme: Enum | msgspec.UnsetType = msgspec.UNSET
    appearance: Enum | msgspec.UnsetType = msgspec.UNSET
    memo_visibility: Enum | msgspec.UnsetType = msgspec.UNSET
    save_media_metadata: bool | msgspec.UnsetType = msgspec.UNSET


class UserSettingIn(In):
    name: Any = msgspec.UNSET  # the path names the setting
    general_setting: GeneralSettingIn | msgspec.UnsetType = msgspec.UNSET


def _own(caller: Caller, user: str) -> str:
    username = resource_id(user, "users", field="user")
    if username != caller.username:
        raise PermissionDenied("a user's settings are read and changed by that user only")
    return username


def _setting(setting: str) -> None:
    key = setting.rsplit("/", 1)[-1]
    if key != GENERAL:
        raise NotFound(f"user setting {setting!r} not found (Daybook keeps GENERAL only)")


def _out(username: str, values: dict[str, Any]) -> UserSetting:
    return UserSetting(
        name=f"users/{username}/settings/{GENERAL}",
        general_setting=GeneralSetting(
            locale=str(values["locale"]),
            theme=str(values["theme"]),
            memo_visibility=str(values["memoVisibility"]),
            save_media_metadata=bool(values["saveMediaMetadata"]),
            appearance=str(values["theme"]),
        ),
    )


def _validated(field: str, value: Any) -> Any:
    if field == "locale" and not _LOCALE.fullmatch(value):
        raise InvalidArgument(f"generalSetting.locale: {value!r} is not a language tag")
    if field == "theme" and not _THEME.fullmatch(value):
        raise InvalidArgument(
            f"generalSetting.theme: {value!r} must be 1-32 lowercase letters, digits or '-'"
        )
    if field == "memoVisibility" and value not in VISIBILITIES:
        raise InvalidArgument(
            f"generalSetting.memoVisibility: {value!r} is not one of {', '.join(VISIBILITIES)}"
        )
    return value


def _changes(data: GeneralSettingIn, mask: str | None) -> dict[str, Any]:
    given = {
        "locale": data.locale,
        "theme": data.theme if isinstance(data.theme, str) else data.appearance,
        "memoVisibility": data.memo_visibility,
        "saveMediaMetadata": data.save_media_metadata,
    }
    if mask is None or not mask.strip():
        fields = {k for k, v in given.items() if not isinstance(v, msgspec.UnsetType)}
    else:
        fields = set()
        for raw in mask.split(","):
            path = raw.strip().removeprefix("general_setting.").removeprefix("generalSetting.")
            key = path.replace("_", "").lower()
            if key not in MASK:
                raise InvalidArgument(f"updateMask: unknown path {raw.strip()!r}")
            fields.add(MASK[key])
    changes = {}
    for field in fields:
        value = given[field]
        if isinstance(value, msgspec.UnsetType):
            raise InvalidArgument(f"generalSetting.{field}: named in updateMask but missing")
        changes[field] = _validated(field, value)
    return changes


class UserSettingController(Controller):
    path = "/api/v1/users/{user:str}/settings"
    tags = ("UserService",)
    guards = [requires_user, management_plane]  # noqa: RUF012 (Litestar's layer attribute)

    @get("", operation_id="UserService_ListUserSettings", responses=errors())
    async def list_settings(self, ctx: RequestContext, user: UserName) -> ListUserSettingsResponse:
        username = _own(ctx.user, user)
        return ListUserSettingsResponse(
            settings=[_out(username, await load_general(ctx.db, ctx.user))]
        )

    @get("/{setting:str}", operation_id="UserService_GetUserSetting", responses=errors())
    async def get_setting(
        self, ctx: RequestContext, user: UserName, setting: SettingName
    ) -> UserSetting:
        username = _own(ctx.user, user)
        _setting(setting)
        return _out(username, await load_general(ctx.db, ctx.user))

    @patch(
        "/{setting:str}",
        operation_id="UserService_UpdateUserSetting",
        guards=[writable_key],
        responses=errors(),
    )
    async def update_setting(
        self,
        ctx: RequestContext,
        user: UserName,
        setting: SettingName,
        data: UserSettingIn,
        update_mask: Annotated[str | None, Parameter(query="updateMask", max_length=512)] = None,
    ) -> UserSetting:
        username = _own(ctx.user, user)
        _setting(setting)
        general = data.general_setting
        if isinstance(general, msgspec.UnsetType):
            raise InvalidArgument("generalSetting: required")
        values = await load_general(ctx.db, ctx.user)
        values.update(_changes(general, update_mask))
        await save_general(ctx.db, ctx.user, values)
        return _out(username, values)
