"""Query parameters that several list operations share, spelled once.

``pageSize`` accepts any int32 (Memos clients send 0 or negatives for "the
default"; ``app.api.paging.page_size`` clamps it), ``pageToken`` is an
opaque signed token, ``filter`` a CEL expression (``app.filter``).
"""

from __future__ import annotations

from typing import Annotated

from litestar.params import Parameter

__all__ = ["FilterText", "PageSize", "PageToken"]

PageSize = Annotated[int | None, Parameter(query="pageSize", ge=-(2**31), le=2**31)]
PageToken = Annotated[str | None, Parameter(query="pageToken", max_length=4096)]
FilterText = Annotated[str | None, Parameter(query="filter", max_length=8192)]
