"""AttachmentService, the memo's attachment list, and the file download routes."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, Response, delete, get, patch, post
from litestar.background_tasks import BackgroundTask
from litestar.params import Parameter

from app.api import uploads
from app.api.bounds import Name, Title, Url
from app.api.context import RequestContext, writable_key
from app.api.paging import page_size as clamp_page_size
from app.api.params import FilterText, PageSize, PageToken
from app.api.responses import errors
from app.api.structs import In, Out
from app.attachments import storage
from app.attachments.metadata import file_headers
from app.attachments.query_filter import attachment_filter_clause
from app.attachments.service import (
    NewAttachment,
    TooLarge,
    attachment_uid,
    create_attachment,
    delete_attachment,
    list_own,
    load_visible,
    memo_attachments,
    present,
    rename_attachment,
    set_memo_attachments,
)
from app.deps import requires_user
from app.errors import InvalidArgument, NotFound
from app.memos.lookup import MemoName, readable_memo
from app.memos.schemas import AttachmentRef

AttachmentName = Annotated[str, Parameter(description="attachments/{id} or {id}", max_length=64)]
MAX_MEMO_ATTACHMENTS = 1000  # bound to one memo per call


class AttachmentIn(In):
    filename: Title = ""
    type: Title = ""
    # base64, as protobuf's JSON mapping of bytes; bounded by the instance's
    # attachment size limit, checked before decoding (_decode_base64).
    content: str = ""
    memo: Name = ""
    name: Any = msgspec.UNSET  # output-only, ignored
    external_link: Url = ""  # a link only: nothing is uploaded
    create_time: Any = msgspec.UNSET  # output-only, ignored
    size: Any = msgspec.UNSET  # output-only, ignored


class CreateAttachmentBody(AttachmentIn):
    attachment: AttachmentIn | None = None  # also accept the wrapped form


class UpdateAttachmentBody(In):
    filename: Title | msgspec.UnsetType = msgspec.UNSET
    # Everything else of Memos' Attachment is output-only or fixed at upload: ignored.
    name: Any = msgspec.UNSET
    type: Any = msgspec.UNSET
    external_link: Any = msgspec.UNSET
    memo: Any = msgspec.UNSET
    create_time: Any = msgspec.UNSET
    size: Any = msgspec.UNSET
    content: Any = msgspec.UNSET


MAX_BATCH_DELETE = 100


class BatchDeleteAttachmentsRequest(In):
    names: Annotated[list[Name], msgspec.Meta(max_length=MAX_BATCH_DELETE)] = msgspec.field(
        default_factory=list
    )


class ListAttachmentsResponse(Out):
    attachments: list[AttachmentRef]
    next_page_token: str = ""


class NameIn(In):
    name: Name = ""


class SetMemoAttachmentsRequest(In):
    attachments: Annotated[list[NameIn], msgspec.Meta(max_length=MAX_MEMO_ATTACHMENTS)] = (
        msgspec.field(default_factory=list)
    )


def _decode_base64(text: str, limit: int) -> bytes:
    if len(text) > (limit // 3 + 1) * 4 + 8:
        raise TooLarge(f"content: exceeds the attachment size limit of {limit} bytes")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgument("content: not valid base64") from None


async def _read_upload(request: Request[Any, Any, Any], limit: int) -> tuple[NewAttachment, str]:
    """The upload from a JSON body (base64 ``content``) or a multipart form (``file``)."""
    content_type = request.headers.get("content-type", "")
    upload = request.scope.get(uploads.SCOPE_KEY)
    if isinstance(upload, uploads.Upload):
        # Parsed as it arrived, the file already on disk (app.api.uploads).
        if upload.size > limit:
            raise TooLarge(f"file: exceeds the attachment size limit of {limit} bytes")
        fields = upload.fields
        return (
            NewAttachment(
                filename=fields.get("filename", upload.filename),
                type=fields.get("type", upload.content_type),
                content=b"",
                source=upload.path,
                source_size=upload.size,
            ),
            fields.get("memo", ""),
        )
    if content_type.startswith("multipart/form-data"):
        raise InvalidArgument("file: a multipart upload needs a 'file' part")
    try:
        body = msgspec.json.decode(await request.body(), type=CreateAttachmentBody)
    except msgspec.DecodeError as exc:
        raise InvalidArgument(f"invalid JSON body: {exc}") from None
    item: AttachmentIn = body.attachment or body
    if not item.filename:
        raise InvalidArgument("filename: required")
    content = _decode_base64(item.content, limit)
    new = NewAttachment(
        filename=item.filename, type=item.type, content=content, external_link=item.external_link
    )
    return new, item.memo


class AttachmentController(Controller):
    path = "/api/v1/attachments"
    tags = ("AttachmentService",)

    @post(
        "",
        operation_id="AttachmentService_CreateAttachment",
        status_code=200,
        guards=[requires_user, writable_key],
        responses=errors(409, 413),
    )
    async def create_attachment(
        self,
        request: Request[Any, Any, Any],
        ctx: RequestContext,
        attachment_id: Annotated[str | None, Parameter(query="attachmentId", max_length=64)] = None,
    ) -> AttachmentRef:
        limit = ctx.settings.attachment_size_limit
        new, memo_name = await _read_upload(request, limit)
        row = await create_attachment(
            ctx.db,
            ctx.user,
            ctx.mode,
            new,
            memo_name or None,
            attachment_id or None,
            limit,
            storage.store_from_settings(ctx.settings),
            ctx.now,
        )
        return (await present(ctx.db, [row], ctx.user, ctx.mode))[0]

    @get(
        "",
        operation_id="AttachmentService_ListAttachments",
        guards=[requires_user],
        responses=errors(),
    )
    async def list_attachments(
        self,
        ctx: RequestContext,
        page_size: PageSize = None,
        page_token: PageToken = None,
        filter: FilterText = None,
    ) -> ListAttachmentsResponse:
        db = ctx.db
        clause = attachment_filter_clause(filter, now=ctx.now, dialect_name=db.dialect.name)
        rows, token = await list_own(
            db,
            ctx.user,
            ctx.mode,
            filter,
            clause,
            clamp_page_size(page_size),
            page_token or None,
            ctx.settings.secret,
        )
        return ListAttachmentsResponse(
            attachments=await present(db, rows, ctx.user, ctx.mode),
            next_page_token=token,
        )

    @get("/{attachment:str}", operation_id="AttachmentService_GetAttachment", responses=errors())
    async def get_attachment(
        self, ctx: RequestContext, attachment: AttachmentName
    ) -> AttachmentRef:
        row = await load_visible(ctx.db, attachment_uid(attachment), ctx.caller, ctx.mode)
        return (await present(ctx.db, [row], ctx.caller, ctx.mode))[0]

    @delete(
        "/{attachment:str}",
        operation_id="AttachmentService_DeleteAttachment",
        status_code=200,
        guards=[requires_user, writable_key],
        responses=errors(),
    )
    async def delete_attachment(
        self, ctx: RequestContext, attachment: AttachmentName
    ) -> Response[dict[str, Any]]:
        uid = attachment_uid(attachment)
        kind, key = await delete_attachment(ctx.db, ctx.user, ctx.mode, uid)
        # The bytes go after the response, i.e. after the transaction committed:
        # a rolled-back delete never loses the bytes of a row that still exists.
        store = storage.store_from_settings(ctx.settings)
        return Response({}, background=BackgroundTask(storage.discard, store, kind, key))

    @patch(
        "/{attachment:str}",
        operation_id="AttachmentService_UpdateAttachment",
        guards=[requires_user, writable_key],
        responses=errors(),
    )
    async def update_attachment(
        self,
        ctx: RequestContext,
        attachment: AttachmentName,
        data: UpdateAttachmentBody,
        update_mask: Annotated[str | None, Parameter(query="updateMask", max_length=512)] = None,
    ) -> AttachmentRef:
        """Rename. The mask may name only ``filename`` (and output-only fields, ignored)."""
        uid = attachment_uid(attachment)
        paths = {p.strip().replace("_", "").lower() for p in (update_mask or "").split(",")}
        paths.discard("")
        unknown = paths - {"filename", "name", "createtime", "size", "memo", "type"}
        if unknown:
            raise InvalidArgument(f"updateMask: unknown path {sorted(unknown)[0]!r}")
        if paths & {"type", "memo"}:
            raise InvalidArgument(
                "updateMask: an attachment's type is fixed at upload; "
                "bind it to a memo with SetMemoAttachments"
            )
        db, caller = ctx.db, ctx.user
        if (not paths or "filename" in paths) and isinstance(data.filename, str):
            row = await rename_attachment(db, caller, ctx.mode, uid, data.filename)
        elif "filename" in paths:
            raise InvalidArgument("filename: named in updateMask but missing from the body")
        else:
            row = await load_visible(db, uid, caller, ctx.mode)
        return (await present(db, [row], caller, ctx.mode))[0]

    @post(
        "/:batchDelete",
        operation_id="AttachmentService_BatchDeleteAttachments",
        status_code=200,
        guards=[requires_user, writable_key],
        responses=errors(),
    )
    async def batch_delete(
        self, ctx: RequestContext, data: BatchDeleteAttachmentsRequest
    ) -> Response[dict[str, Any]]:
        """All or nothing: one refused name (not found, not the caller's) deletes none."""
        uids = list(dict.fromkeys(attachment_uid(n) for n in data.names))
        removed = [await delete_attachment(ctx.db, ctx.user, ctx.mode, u) for u in uids]
        store = storage.store_from_settings(ctx.settings)

        async def discard_all() -> None:
            for kind, key in removed:
                await storage.discard(store, kind, key)

        return Response({}, background=BackgroundTask(discard_all))


class MemoAttachmentController(Controller):
    path = "/api/v1/memos/{memo:str}/attachments"
    tags = ("MemoService",)

    @get("", operation_id="MemoService_ListMemoAttachments", responses=errors())
    async def list_memo_attachments(
        self, ctx: RequestContext, memo: MemoName
    ) -> ListAttachmentsResponse:
        row = await readable_memo(ctx.db, memo, ctx.caller, ctx.mode)
        rows = await memo_attachments(ctx.db, row)
        return ListAttachmentsResponse(
            attachments=await present(ctx.db, rows, ctx.caller, ctx.mode)
        )

    @patch(
        "",
        operation_id="MemoService_SetMemoAttachments",
        guards=[requires_user, writable_key],
        responses=errors(),
    )
    async def set_memo_attachments(
        self, ctx: RequestContext, memo: MemoName, data: SetMemoAttachmentsRequest
    ) -> ListAttachmentsResponse:
        db, caller = ctx.db, ctx.user
        row = await readable_memo(db, memo, caller, ctx.mode)
        names = [a.name for a in data.attachments]
        await set_memo_attachments(db, caller, ctx.mode, row, names)
        rows = await memo_attachments(db, row)
        return ListAttachmentsResponse(attachments=await present(db, rows, caller, ctx.mode))


async def _serve(ctx: RequestContext, uid: str) -> Response[bytes]:
    row = await load_visible(ctx.db, attachment_uid(uid), ctx.caller, ctx.mode)
    data = await storage.read(storage.store_from_settings(ctx.settings), row)
    if data is None:
        raise NotFound(f"attachment {row.uid!r}: file not found")
    headers = file_headers(
        row.mime_type,
        row.filename,
        row.memo_visibility,
        ctx.mode.value == "PUBLIC",
    )
    # Litestar appends "; charset=utf-8" to any text/* media type itself.
    media_type = headers.pop("Content-Type").split(";", 1)[0]
    return Response(data, media_type=media_type, headers=headers)


class FileController(Controller):
    """``/file/attachments/{uid}[/{filename}]``: the bytes, under the attachment's read rule.

    The filename segment is cosmetic (clients put it in links); the uid alone
    selects the attachment.
    """

    path = "/file/attachments"
    tags = ("FileService",)

    @get("/{uid:str}", operation_id="FileService_GetAttachmentBinaryShort", responses=errors())
    async def get_short(
        self, ctx: RequestContext, uid: Annotated[str, Parameter(max_length=64)]
    ) -> Response[bytes]:
        return await _serve(ctx, uid)

    @get(
        "/{uid:str}/{filename:str}",
        operation_id="FileService_GetAttachmentBinary",
        responses=errors(),
    )
    async def get_named(
        self,
        ctx: RequestContext,
        uid: Annotated[str, Parameter(max_length=64)],
        filename: Annotated[str, Parameter(max_length=1024)],
    ) -> Response[bytes]:
        return await _serve(ctx, uid)
