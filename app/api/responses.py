"""OpenAPI documentation of the error body, attached to every operation."""

from __future__ import annotations

from litestar.openapi.datastructures import ResponseSpec

from app.errors import ErrorBody


def errors(*statuses: int) -> dict[int, ResponseSpec]:
    base = {400, 401, 403, 404, 413, 429}  # 413: every route's body limit
    return {
        s: ResponseSpec(data_container=ErrorBody, description="Error", generate_examples=False)
        for s in sorted(base | set(statuses))
    }
