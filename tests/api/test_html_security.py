"""Issue 13 item 18: the API reference loads no third-party code, and every HTML
response carries a Content-Security-Policy (decision 0022)."""

from __future__ import annotations

import re
from typing import Any

from litestar.testing import AsyncTestClient

from app.api.reference import render_reference


async def test_schema_page_loads_no_third_party_code(client: AsyncTestClient[Any]) -> None:
    r = await client.get("/schema")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    page = r.text
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "a third-party URL"
    assert "MemoService_ListMemos" in page and "/api/v1/memos:batchCreate" in page
    csp = r.headers["content-security-policy"]
    assert "script-src 'none'" in csp and "default-src 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"


async def test_every_html_response_has_a_csp(client: AsyncTestClient[Any]) -> None:
    for path in ("/", "/schema", "/schema/", "/some/client/route", "/schema/nope"):
        r = await client.get(path)
        if not r.headers.get("content-type", "").startswith("text/html"):
            continue
        csp = r.headers.get("content-security-policy", "")
        assert csp, path
        script = re.search(r"script-src ([^;]*)", csp)
        assert script and "'unsafe-inline'" not in script.group(1), (path, csp)
        assert "frame-ancestors 'none'" in csp, path
    assert (await client.get("/")).headers["content-security-policy"].startswith("default-src")


def test_reference_escapes_what_the_document_says() -> None:
    page = render_reference(
        {
            "info": {"title": "<b>x</b>", "version": "1"},
            "paths": {
                "/api/v1/x/:do": {
                    "get": {"operationId": "X_<script>", "summary": "<img src=x onerror=1>"}
                }
            },
        }
    ).decode()
    assert "<script>" not in page and "<img" not in page and "<b>" not in page
    assert "/api/v1/x:do" in page and "&lt;script&gt;" in page
