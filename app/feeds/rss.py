"""RSS 2.0 documents built with ``xml.etree`` (every value escaped by the serialiser).

Characters that XML 1.0 cannot carry at all (most C0 controls, lone
surrogates, U+FFFE/U+FFFF) are dropped first, since no escaping makes them
legal and a feed reader would reject the whole document.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
TITLE_CHARS = 80


@dataclass(frozen=True, slots=True)
class FeedItem:
    uid: str
    title: str
    content: str
    created_ts: int
    author: str


def xml_text(value: str) -> str:
    return _NOT_XML.sub("", value)


def _title(item: FeedItem) -> str:
    """The memo's H1 title, else its first line, else its name."""
    lines = item.content.strip().splitlines()
    return (item.title or (lines[0] if lines else "") or f"memos/{item.uid}")[:TITLE_CHARS]


def render_feed(title: str, link: str, description: str, items: Sequence[FeedItem]) -> bytes:
    rss = ET.Element("rss", version="2.0")
    channel = ET.SubElement(rss, "channel")
    ET.SubElement(channel, "title").text = xml_text(title)
    ET.SubElement(channel, "link").text = xml_text(link)
    ET.SubElement(channel, "description").text = xml_text(description)
    ET.SubElement(channel, "lastBuildDate").text = format_datetime(datetime.now(UTC))
    base = link.rstrip("/")
    for item in items:
        entry = ET.SubElement(channel, "item")
        url = f"{base}/memos/{item.uid}"
        ET.SubElement(entry, "title").text = xml_text(_title(item))
        ET.SubElement(entry, "link").text = xml_text(url)
        ET.SubElement(entry, "guid", isPermaLink="true").text = xml_text(url)
        ET.SubElement(entry, "author").text = xml_text(item.author)
        ET.SubElement(entry, "pubDate").text = format_datetime(
            datetime.fromtimestamp(item.created_ts, UTC)
        )
        ET.SubElement(entry, "description").text = xml_text(item.content)
    body: bytes = ET.tostring(rss, encoding="utf-8", xml_declaration=True)
    return body
