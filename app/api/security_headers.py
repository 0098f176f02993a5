"""A Content-Security-Policy on every HTML response, whoever produced it.

The web client (``app.webui``) and attachment files (``app.attachments``)
set their own, narrower policies; every other ``text/html`` response (the API
reference at ``/schema``, framework error pages, anything added later) gets
:data:`HTML_CSP`: nothing but this origin's own images and styles, no script
at all, no framing, no plugins. Applied around the whole app (``app.server.Daybook``),
so a new HTML route cannot forget it.
"""

from __future__ import annotations

from litestar.types import Message, Send

HTML_CSP = (
    "default-src 'none'; img-src 'self' data:; style-src 'self'; script-src 'none';"
    " base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def with_html_csp(send: Send) -> Send:
    """``send``, adding the CSP (and ``nosniff``) to an HTML response that has none."""

    async def send_with_csp(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            names = {bytes(name).lower() for name, _ in headers}
            content_type = next(
                (bytes(v) for n, v in headers if bytes(n).lower() == b"content-type"), b""
            ).lower()
            if content_type.startswith(b"text/html"):
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", HTML_CSP.encode()))
                if b"x-content-type-options" not in names:
                    headers.append((b"x-content-type-options", b"nosniff"))
                message = {**message, "headers": headers}
        await send(message)

    return send_with_csp
