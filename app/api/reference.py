"""``/schema``: the API reference as plain server-rendered HTML, no third-party code.

Litestar's bundled renderers (Scalar, Swagger UI, Redoc ...) load unpinned
scripts from public CDNs into Daybook's origin, where a compromised CDN would
run with the signed-in user's cookie. This page is built from the OpenAPI
document on the server: one table row per operation, every value escaped, no
script and no inline style, so the strict CSP of
``app.api.security_headers`` applies unchanged. The machine-readable
document stays at ``/api/v1/openapi.json`` for tools that render it.
"""

from __future__ import annotations

import html
from typing import Any

from litestar import Request
from litestar.openapi.plugins import OpenAPIRenderPlugin

METHODS = ("get", "post", "put", "patch", "delete")


def render_reference(schema: dict[str, Any]) -> bytes:
    """Pure: the reference page of an OpenAPI document (AIP paths, ``/:x`` shown as ``:x``)."""
    info = schema.get("info", {})
    title = html.escape(f"{info.get('title', 'API')} {info.get('version', '')}".strip())
    rows: list[str] = []
    for path, item in sorted(schema.get("paths", {}).items()):
        shown = path.replace("/:", ":")
        for method in METHODS:
            operation = item.get(method)
            if not isinstance(operation, dict):
                continue
            summary = operation.get("summary") or operation.get("description") or ""
            rows.append(
                "<tr><td><code>{}</code></td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>".format(
                    html.escape(method.upper()),
                    html.escape(shown),
                    html.escape(str(operation.get("operationId", ""))),
                    html.escape(str(summary).strip().split("\n", 1)[0]),
                )
            )
    description = html.escape(str(info.get("description", "")))
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{title}</title></head><body>"
        f"<h1>{title}</h1><p>{description}</p>"
        '<p>OpenAPI document: <a href="/api/v1/openapi.json">/api/v1/openapi.json</a></p>'
        "<table><thead><tr><th>Method</th><th>Path</th><th>Operation</th><th>Summary</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table></body></html>\n"
    ).encode()


class ReferenceRenderPlugin(OpenAPIRenderPlugin):
    def __init__(self) -> None:
        super().__init__(path="/")

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        return render_reference(openapi_schema)
