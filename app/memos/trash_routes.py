"""The trash endpoints: a user's trash, undelete, purge, and the retention setting.

AIP-164 (soft delete) and AIP-165 (purge) shapes, in Memos' naming:

- ``DELETE /api/v1/memos/{memo}`` (``MemoService_DeleteMemo``, unchanged for
  clients) moves the memo to its creator's trash; it answers 404 afterwards.
- ``GET /api/v1/users/{user}/trash`` (``MemoService_ListTrashedMemos``): the
  caller's own trash, ``{memos: [TrashedMemo], nextPageToken}``.
- ``POST /api/v1/memos/{memo}:undelete`` (``MemoService_UndeleteMemo``): puts
  the group back, answers the Memo.
- ``POST /api/v1/memos/{memo}:purge`` (``MemoService_PurgeMemo``) and ``POST
  /api/v1/users/{user}/trash:purge`` (``MemoService_PurgeTrash``): delete for
  good, ``{purgedCount}`` memos (comments included). A session or a sign-in
  token only: no personal access token, restricted or not, can purge.
- ``GET/PATCH /api/v1/instance/settings/TRASH`` (admin): ``{name,
  retentionDays}``, default 30, 0 keeps trashed memos until purged.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, Response, get, patch, post
from litestar.background_tasks import BackgroundTask
from litestar.params import Parameter

from app.access.caller import Caller
from app.api.context import RequestContext, writable_key
from app.api.paging import page_size as clamp_page_size
from app.api.params import PageSize, PageToken
from app.api.responses import errors
from app.api.structs import Out
from app.attachments import storage
from app.deps import management_plane, requires_session, requires_user
from app.errors import PermissionDenied
from app.instance.routes import InstanceSettingIn
from app.memos.lookup import MemoName, memo_uid, written_memo
from app.memos.present import present_one
from app.memos.schemas import Memo
from app.memos.trash import (
    TRASH_SETTING,
    ListTrashResponse,
    TrashSettings,
    list_trash,
    load_trash_settings,
    load_trashed,
    purge_own,
    remove_files,
    save_trash_settings,
    undelete,
    valid_retention,
)
from app.settings import Settings

UserName = Annotated[str, Parameter(description="users/{username} or username", max_length=80)]


def _own(user: str, caller: Caller) -> None:
    """The trash is the caller's own: another user's answers 403, whoever asks."""
    if user.removeprefix("users/") != caller.username:
        raise PermissionDenied("a trash can only be read or emptied by its owner")


class PurgeResponse(Out):
    purged_count: int


class TrashSetting(Out):
    name: str
    retention_days: int


class TrashSettingIn(InstanceSettingIn):
    """``retentionDays``, in the body every ``instance/settings/{setting}`` takes.

    The API describes one body for every setting (Memos' oneOf), and this
    route answers that path for TRASH: a field of another setting with the
    wrong type is refused here as it is there (400), never silently taken.
    """

    retention_days: int | msgspec.UnsetType = msgspec.UNSET


def _setting_out(value: TrashSettings) -> TrashSetting:
    return TrashSetting(
        name=f"instance/settings/{TRASH_SETTING}", retention_days=value.retention_days
    )


class TrashController(Controller):
    path = "/api/v1"
    tags = ("MemoService",)

    @get(
        "/users/{user:str}/trash",
        operation_id="MemoService_ListTrashedMemos",
        guards=[requires_user],
        responses=errors(),
    )
    async def list_trashed(
        self,
        ctx: RequestContext,
        user: UserName,
        page_size: PageSize = None,
        page_token: PageToken = None,
    ) -> ListTrashResponse:
        """The caller's trash, most recently trashed first (each entry is a DELETE)."""
        _own(user, ctx.user)
        return await list_trash(
            ctx.db,
            ctx.user,
            ctx.mode,
            clamp_page_size(page_size),
            page_token or None,
            ctx.settings.secret,
        )

    @post(
        "/memos/{memo:str}/:undelete",
        operation_id="MemoService_UndeleteMemo",
        guards=[requires_user, writable_key],
        status_code=200,
        responses=errors(412),
    )
    async def undelete_memo(self, ctx: RequestContext, memo: MemoName) -> Memo:
        """Restore a memo of the caller's trash, with the comments trashed with it."""
        db = ctx.db
        row = await load_trashed(db, memo_uid(memo), ctx.user, ctx.mode)
        await undelete(db, ctx.write, row)
        live = await written_memo(db, row.id)
        return await present_one(db, live, ctx.user, ctx.mode)

    @post(
        "/memos/{memo:str}/:purge",
        operation_id="MemoService_PurgeMemo",
        guards=[requires_session],
        status_code=200,
        responses=errors(412),
    )
    async def purge_memo(self, ctx: RequestContext, memo: MemoName) -> Response[PurgeResponse]:
        """Delete one memo of the caller's trash for good (attachments' bytes included)."""
        count, files = await purge_own(ctx.db, ctx.user, ctx.mode, ctx.now, memo_uid(memo))
        return self._purged(ctx.settings, count, files)

    @post(
        "/users/{user:str}/trash/:purge",
        operation_id="MemoService_PurgeTrash",
        guards=[requires_session],
        status_code=200,
        responses=errors(),
    )
    async def purge_trash(self, ctx: RequestContext, user: UserName) -> Response[PurgeResponse]:
        """Empty the caller's trash."""
        _own(user, ctx.user)
        count, files = await purge_own(ctx.db, ctx.user, ctx.mode, ctx.now, None)
        return self._purged(ctx.settings, count, files)

    @staticmethod
    def _purged(settings: Settings, count: int, files: list[Any]) -> Response[PurgeResponse]:
        # The bytes go after the response, i.e. after the transaction committed.
        store = storage.store_from_settings(settings)
        return Response(
            PurgeResponse(purged_count=count),
            background=BackgroundTask(remove_files, store, files) if files else None,
        )

    @get(
        "/instance/settings/TRASH",
        operation_id="InstanceService_GetTrashSetting",
        guards=[requires_user, management_plane],
        responses=errors(),
    )
    async def get_setting(self, ctx: RequestContext) -> TrashSetting:
        if not ctx.user.is_admin:
            raise PermissionDenied("only an admin can read instance settings")
        return _setting_out(await load_trash_settings(ctx.db))

    @patch(
        "/instance/settings/TRASH",
        operation_id="InstanceService_UpdateTrashSetting",
        guards=[requires_user, management_plane],
        responses=errors(),
    )
    async def update_setting(self, ctx: RequestContext, data: TrashSettingIn) -> TrashSetting:
        if not ctx.user.is_admin:
            raise PermissionDenied("only an admin can change instance settings")
        value = await load_trash_settings(ctx.db)
        if isinstance(data.retention_days, int):
            value = TrashSettings(retention_days=valid_retention(data.retention_days))
        await save_trash_settings(ctx.db, value)
        return _setting_out(value)
