"""Title, description and image of a web page, from its ``<head>``.

Open Graph tags win over ``<title>`` and ``<meta name=description>``, as
Memos reads them. Parsing is the standard library's tolerant HTML parser
over at most the bytes the fetcher read; it stops at ``</head>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urljoin

MAX_TEXT = 1024


@dataclass(frozen=True, slots=True)
class Preview:
    title: str
    description: str
    image: str


class _Head(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.meta: dict[str, str] = {}
        self.title = ""
        self._in_title = False
        self.done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.done:
            return
        if tag == "title":
            self._in_title = True
        elif tag == "meta":
            values = {k.lower(): v or "" for k, v in attrs}
            key = (values.get("property") or values.get("name") or "").lower()
            if key and "content" in values:
                self.meta.setdefault(key, values["content"])
        elif tag == "body":
            self.done = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag == "head":
            self.done = True

    def handle_data(self, data: str) -> None:
        if self._in_title and not self.done and len(self.title) < MAX_TEXT:
            self.title += data


def _clean(text: str) -> str:
    return " ".join(text.split())[:MAX_TEXT]


def parse(html: str, page_url: str) -> Preview:
    head = _Head()
    head.feed(html)
    meta = head.meta
    image = meta.get("og:image") or meta.get("twitter:image") or ""
    if image:
        image = urljoin(page_url, image.strip())
        if not image.startswith(("http://", "https://")):
            image = ""
    return Preview(
        title=_clean(meta.get("og:title") or head.title),
        description=_clean(meta.get("og:description") or meta.get("description") or ""),
        image=image[:2048],
    )


def decode(body: bytes, content_type: str) -> str:
    charset = "utf-8"
    for part in content_type.split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset" and value:
            charset = value.strip('"').strip()
    try:
        return body.decode(charset, errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")
