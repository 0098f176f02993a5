"""InstanceService: the public profile, the settings as Memos nests them, and stats.

Memos 0.31 names settings ``instance/settings/{KEY}`` and answers each with
one nested message (``generalSetting``, ``accessSetting``, ...). Daybook keeps
its own flat ACCESS fields beside the nested one (its web client and older
scripts send and read them), and maps the Memos fields it has a meaning for
onto the one stored ``AccessSettings`` row; the rest are written with their
defaults, as Memos' gateway writes them, and refused on update.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, get, patch, post
from litestar.datastructures import State
from litestar.params import Parameter

from app import __version__
from app.access.audience import AccessMode
from app.access.caller import Caller
from app.api.bounds import Enum, Name
from app.api.context import RequestContext
from app.api.responses import errors
from app.api.structs import In, Out, rfc3339
from app.deps import management_plane, requires_user
from app.errors import InvalidArgument, NotFound, PermissionDenied, Unauthenticated
from app.instance import service
from app.instance.store import ACCESS, AccessSettings, replace, save_access
from app.settings import Settings
from app.users.schemas import User, user_out
from app.users.service import user_count

MEMOS_ACCESS_MODE = {
    AccessMode.PRIVATE: "INSTANCE_ACCESS_MODE_PRIVATE",
    AccessMode.PUBLIC: "INSTANCE_ACCESS_MODE_PUBLIC",
}
KEYS = ("GENERAL", "STORAGE", "MEMO_RELATED", "TAGS", "NOTIFICATION", ACCESS)
PUBLIC_KEYS = {"GENERAL", "MEMO_RELATED", "TAGS"}  # Memos' web client reads them signed out
DEFAULT_REACTIONS = ("👍", "👎", "❤️", "🎉", "😄", "😕", "😢", "😡")
MAX_BATCH = 16


class InstanceProfile(Out):
    version: str
    demo: bool
    instance_url: str
    commit: str
    needs_setup: bool
    access_mode: str  # INSTANCE_ACCESS_MODE_*
    admin: User | msgspec.UnsetType = msgspec.UNSET
    # Daybook's own fields (its web client reads them).
    mode: str = "prod"
    allow_registration: bool = False
    disallow_public_visibility: bool = False
    initialized: bool = False  # false until the first user signs up


class GeneralSetting(Out):
    disallow_user_registration: bool
    disallow_password_auth: bool = False
    additional_script: str = ""
    additional_style: str = ""
    week_start_day_offset: int = 0
    disallow_change_username: bool = False
    disallow_change_nickname: bool = False


class AccessSettingMemos(Out):
    access_mode: str


class MemoRelatedSetting(Out):
    content_length_limit: int
    enable_double_click_edit: bool = False
    reactions: list[str] = msgspec.field(default_factory=lambda: list(DEFAULT_REACTIONS))


class StorageSetting(Out):
    storage_type: str
    upload_size_limit_mb: str
    filepath_template: str = ""
    storages: list[Any] = msgspec.field(default_factory=list)
    default_storage_id: str = ""


class TagsSetting(Out):
    tags: dict[str, Any] = msgspec.field(default_factory=dict)


class NotificationSetting(Out):
    pass


class InstanceSetting(Out):
    name: str
    general_setting: GeneralSetting | msgspec.UnsetType = msgspec.UNSET
    storage_setting: StorageSetting | msgspec.UnsetType = msgspec.UNSET
    memo_related_setting: MemoRelatedSetting | msgspec.UnsetType = msgspec.UNSET
    tags_setting: TagsSetting | msgspec.UnsetType = msgspec.UNSET
    notification_setting: NotificationSetting | msgspec.UnsetType = msgspec.UNSET
    access_setting: AccessSettingMemos | msgspec.UnsetType = msgspec.UNSET
    # ACCESS only: Daybook's flat fields, as before the Memos shape.
    access_mode: str | msgspec.UnsetType = msgspec.UNSET
    disallow_public_visibility: bool | msgspec.UnsetType = msgspec.UNSET
    allow_registration: bool | msgspec.UnsetType = msgspec.UNSET
    content_length_limit: int | msgspec.UnsetType = msgspec.UNSET


class GeneralSettingIn(In):
    disallow_user_registration: bool | msgspec.UnsetType = msgspec.UNSET


class AccessSettingMemosIn(In):
    access_mode: Enum | msgspec.UnsetType = msgspec.UNSET


class MemoRelatedSettingIn(In):
    content_length_limit: int | msgspec.UnsetType = msgspec.UNSET


class InstanceSettingIn(In):
    """Memos' nested form or Daybook's flat ACCESS fields; output-only ``name`` ignored."""

    name: Any = msgspec.UNSET
    general_setting: GeneralSettingIn | msgspec.UnsetType = msgspec.UNSET
    access_setting: AccessSettingMemosIn | msgspec.UnsetType = msgspec.UNSET
    memo_related_setting: MemoRelatedSettingIn | msgspec.UnsetType = msgspec.UNSET
    access_mode: Enum | msgspec.UnsetType = msgspec.UNSET
    disallow_public_visibility: bool | msgspec.UnsetType = msgspec.UNSET
    allow_registration: bool | msgspec.UnsetType = msgspec.UNSET
    content_length_limit: int | msgspec.UnsetType = msgspec.UNSET


class BatchGetInstanceSettingsRequest(In):
    names: Annotated[list[Name], msgspec.Meta(max_length=MAX_BATCH)] = msgspec.field(
        default_factory=list
    )


class BatchGetInstanceSettingsResponse(Out):
    settings: list[InstanceSetting]


class DatabaseStats(Out):
    driver: str
    size_bytes: str


class InstanceStats(Out):
    database: DatabaseStats
    local_storage_bytes: str
    generated_time: str


def _key(setting: str) -> str:
    key = setting.removeprefix("instance/settings/")
    if key not in KEYS:
        raise NotFound(f"instance setting {setting!r} not found")
    return key


def setting_out(key: str, value: AccessSettings, settings: Settings) -> InstanceSetting:
    out = InstanceSetting(name=f"instance/settings/{key}")
    if key == "GENERAL":
        out.general_setting = GeneralSetting(
            disallow_user_registration=not value.allow_registration
        )
    elif key == "STORAGE":
        out.storage_setting = StorageSetting(
            storage_type=settings.storage.upper(),
            upload_size_limit_mb=str(settings.attachment_size_limit // (1024 * 1024)),
        )
    elif key == "MEMO_RELATED":
        out.memo_related_setting = MemoRelatedSetting(
            content_length_limit=value.content_length_limit
        )
    elif key == "TAGS":
        out.tags_setting = TagsSetting()
    elif key == "NOTIFICATION":
        out.notification_setting = NotificationSetting()
    else:
        out.access_setting = AccessSettingMemos(access_mode=MEMOS_ACCESS_MODE[value.access_mode])
        out.access_mode = value.access_mode.value
        out.disallow_public_visibility = value.disallow_public_visibility
        out.allow_registration = value.allow_registration
        out.content_length_limit = value.content_length_limit
    return out


def _may_read(key: str, caller: Caller | None, access: AccessSettings) -> None:
    if key in PUBLIC_KEYS and (caller is not None or access.access_mode is AccessMode.PUBLIC):
        return
    if caller is None:
        raise Unauthenticated("sign in to read instance settings")
    if not caller.is_admin:
        raise PermissionDenied("only an admin can read instance settings")


def _access_mode(raw: str) -> AccessMode:
    text = raw.removeprefix("INSTANCE_ACCESS_MODE_")
    try:
        return AccessMode(text)
    except ValueError:
        raise InvalidArgument(
            f"accessMode: {raw!r} is not one of INSTANCE_ACCESS_MODE_PRIVATE, "
            "INSTANCE_ACCESS_MODE_PUBLIC (or PRIVATE, PUBLIC)"
        ) from None


def _content_limit(value: int) -> int:
    if not 1 <= value <= 1024 * 1024:
        raise InvalidArgument("contentLengthLimit: must be between 1 and 1048576 bytes")
    return value


def apply_update(key: str, value: AccessSettings, data: InstanceSettingIn) -> AccessSettings:
    """The stored settings after ``data``; a 400 for a setting Daybook cannot change here."""
    if key not in ("GENERAL", "MEMO_RELATED", ACCESS):
        raise InvalidArgument(
            f"instance setting {key!r} is fixed by the server's configuration, not the API"
        )
    general, nested, related = data.general_setting, data.access_setting, data.memo_related_setting
    if not isinstance(general, msgspec.UnsetType) and isinstance(
        general.disallow_user_registration, bool
    ):
        value = replace(value, allow_registration=not general.disallow_user_registration)
    if not isinstance(nested, msgspec.UnsetType) and isinstance(nested.access_mode, str):
        value = replace(value, access_mode=_access_mode(nested.access_mode))
    if not isinstance(related, msgspec.UnsetType) and isinstance(related.content_length_limit, int):
        value = replace(value, content_length_limit=_content_limit(related.content_length_limit))
    if isinstance(data.access_mode, str):
        value = replace(value, access_mode=_access_mode(data.access_mode))
    if isinstance(data.disallow_public_visibility, bool):
        value = replace(value, disallow_public_visibility=data.disallow_public_visibility)
    if isinstance(data.allow_registration, bool):
        value = replace(value, allow_registration=data.allow_registration)
    if isinstance(data.content_length_limit, int):
        value = replace(value, content_length_limit=_content_limit(data.content_length_limit))
    return value


class InstanceController(Controller):
    path = "/api/v1/instance"
    tags = ("InstanceService",)

    @get("/profile", operation_id="InstanceService_GetInstanceProfile", responses=errors())
    async def profile(self, ctx: RequestContext) -> InstanceProfile:
        access = ctx.access
        admin = await service.first_admin(ctx.db)
        users = await user_count(ctx.db)
        return InstanceProfile(
            version=__version__,
            demo=False,
            instance_url=ctx.settings.public_url,
            commit="",
            needs_setup=users == 0,
            access_mode=MEMOS_ACCESS_MODE[access.access_mode],
            admin=user_out(admin, private=False) if admin is not None else msgspec.UNSET,
            allow_registration=access.allow_registration,
            disallow_public_visibility=access.disallow_public_visibility,
            initialized=users > 0,
        )

    @get(
        "/stats",
        operation_id="InstanceService_GetInstanceStats",
        guards=[requires_user, management_plane],
        responses=errors(),
    )
    async def stats(self, ctx: RequestContext) -> InstanceStats:
        if not ctx.user.is_admin:
            raise PermissionDenied("only an admin can read instance stats")
        db = ctx.db
        local = await service.local_storage_bytes(db)
        return InstanceStats(
            database=DatabaseStats(
                driver="sqlite" if db.dialect.name == "sqlite" else "postgres",
                size_bytes=str(await service.database_bytes(db)),
            ),
            local_storage_bytes=str(local),
            generated_time=rfc3339(ctx.now),
        )

    @post(
        "/settings/:batchGet",
        operation_id="InstanceService_BatchGetInstanceSettings",
        opt={"tx": "read"},
        status_code=200,
        guards=[management_plane],
        responses=errors(),
    )
    async def batch_get(
        self, ctx: RequestContext, data: BatchGetInstanceSettingsRequest
    ) -> BatchGetInstanceSettingsResponse:
        keys = [_key(n) for n in data.names]
        for key in keys:
            _may_read(key, ctx.caller, ctx.access)
        return BatchGetInstanceSettingsResponse(
            settings=[setting_out(k, ctx.access, ctx.settings) for k in keys]
        )

    @get(
        "/settings/{setting:str}",
        operation_id="InstanceService_GetInstanceSetting",
        guards=[management_plane],
        responses=errors(),
    )
    async def get_setting(
        self, ctx: RequestContext, setting: Annotated[str, Parameter(max_length=64)]
    ) -> InstanceSetting:
        key = _key(setting)
        _may_read(key, ctx.caller, ctx.access)
        return setting_out(key, ctx.access, ctx.settings)

    @patch(
        "/settings/{setting:str}",
        operation_id="InstanceService_UpdateInstanceSetting",
        guards=[requires_user, management_plane],
        responses=errors(),
    )
    async def update_setting(
        self,
        ctx: RequestContext,
        state: State,
        setting: Annotated[str, Parameter(max_length=64)],
        data: InstanceSettingIn,
    ) -> InstanceSetting:
        if not ctx.user.is_admin:
            raise PermissionDenied("only an admin can change instance settings")
        key = _key(setting)
        value = apply_update(key, ctx.access, data)
        await save_access(ctx.db, value)
        # Memo routes' body limit (app.api.body_limits) widens with a raised content limit.
        if value.content_length_limit > getattr(state, "content_length_seen", 0):
            state.content_length_seen = value.content_length_limit
        return setting_out(key, value, ctx.settings)
