"""The labelled sets of ``bench.search_eval``: one written for the project, two built
from public text collections that nobody here wrote, each with a held-out split.

- ``daily-log``: ``bench/eval/`` (``build.py`` from ``topics.py``): 111 topics of
  daily-log notes, a paraphrase and a known-item query per topic, 800 filler notes.
- ``python-docs``: CPython's own language reference topics as shipped in every
  Python (``pydoc_data.topics``, the text of ``help('assignment')``; PSF licence).
  Each section (a heading underlined with ``*``, ``=`` or ``-``) becomes a note of
  its body, at most ``MAX_CHARS`` characters, with its heading removed; the query
  is the heading ("Augmented assignment statements"), the relevant note its body.
- ``linux-man``: the Linux man-pages project's section 2 (system calls), as Debian
  ships it in ``manpages-dev`` (``/usr/share/man/man2``; licence per page, mostly
  "Linux-man-pages-copyleft"). The note is the page's DESCRIPTION section
  (rendered by ``man``), at most ``MAX_CHARS`` characters; the query is the
  page's one-line summary from its NAME section ("open and possibly create a
  file"), the relevant note that page.

Queries come from the collections' own structure, never from whoever tunes the
ranking. Splits are deterministic: a query is held out when the SHA-1 of its
set and group (topic, section or page) falls in ``HELD_OUT`` of 10 buckets; tuning
(``--calibrate``) only ever reads the ``tune`` split.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).parent
MAX_CHARS = 2000  # a long memo; the models read the first 256 (MiniLM) or 512 tokens
HELD_OUT = 3  # of 10 buckets
MAN2 = Path("/usr/share/man/man2")


@dataclass(frozen=True)
class Doc:
    id: str
    text: str
    ts: int


@dataclass(frozen=True)
class EvalSet:
    name: str
    source: str  # where the text comes from, with its version
    licence: str
    docs: list[Doc]
    queries: list[tuple[str, str]]  # (query id, text)
    qrels: dict[str, set[str]]
    groups: dict[str, str]  # query id -> the group its split is decided by
    held_out: set[str] = field(default_factory=set)

    def split(self, qid: str) -> str:
        return "held-out" if qid in self.held_out else "tune"


def _bucket(set_name: str, group: str) -> int:
    return int(hashlib.sha1(f"{set_name}:{group}".encode()).hexdigest(), 16) % 10


def _finish(
    name: str,
    source: str,
    licence: str,
    docs: list[Doc],
    queries: list[tuple[str, str]],
    qrels: dict[str, set[str]],
    groups: dict[str, str],
) -> EvalSet:
    held = {q for q, _ in queries if _bucket(name, groups[q]) < HELD_OUT}
    return EvalSet(name, source, licence, docs, queries, qrels, groups, held)


def _timestamps(n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    start = 1_700_000_000
    return [start + rng.randrange(365 * 86_400) for _ in range(n)]


# --- daily-log ------------------------------------------------------------------------------


def daily_log() -> EvalSet:
    docs = [
        Doc(d["id"], d["text"], d["ts"])
        for d in map(json.loads, (HERE / "corpus.jsonl").read_text().splitlines())
    ]
    queries = [
        (q, t)
        for q, t in (
            line.split("\t", 1) for line in (HERE / "queries.tsv").read_text().splitlines()
        )
    ]
    qrels: dict[str, set[str]] = {}
    for line in (HERE / "qrels.tsv").read_text().splitlines():
        qid, doc_id, grade = line.split("\t")
        if int(grade) > 0:
            qrels.setdefault(qid, set()).add(doc_id)
    groups = {q: q.split("#", 1)[0] for q, _ in queries}
    return _finish(
        "daily-log", "bench/eval (written for the project)", "project", docs, queries, qrels, groups
    )


# --- python-docs ----------------------------------------------------------------------------

_UNDERLINE = re.compile(r"^([*=\-^~])\1{2,}$")


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) pairs of one pydoc topic, headings being lines underlined
    with a run of one punctuation character of the heading's length."""
    lines = text.splitlines()
    heads = [
        i
        for i in range(len(lines) - 1)
        if lines[i].strip()
        and _UNDERLINE.match(lines[i + 1].strip())
        and abs(len(lines[i + 1].strip()) - len(lines[i].strip())) <= 2
    ]
    out = []
    for n, i in enumerate(heads):
        end = heads[n + 1] if n + 1 < len(heads) else len(lines)
        body = "\n".join(lines[i + 2 : end]).strip()
        out.append((lines[i].strip(), body))
    return out


def python_docs() -> EvalSet:
    import pydoc_data.topics as topics

    docs: list[Doc] = []
    queries: list[tuple[str, str]] = []
    qrels: dict[str, set[str]] = {}
    groups: dict[str, str] = {}
    seen: dict[str, int] = {}
    found: list[tuple[str, str, str]] = []
    for key in sorted(topics.topics):
        for heading, body in _sections(topics.topics[key]):
            if len(body) < 80 or len(re.findall(r"\w+", heading)) < 2:
                continue  # a stub, or a one-word heading ("Examples") that names nothing
            seen[heading.lower()] = seen.get(heading.lower(), 0) + 1
            found.append((key, heading, body))
    stamps = _timestamps(len(found), 18)
    for n, (key, heading, body) in enumerate(found):
        doc_id = f"{key}/{n}"
        docs.append(Doc(doc_id, body[:MAX_CHARS], stamps[n]))
        if seen[heading.lower()] > 1:
            continue  # the same heading in several topics: no single answer
        qid = f"py:{doc_id}"
        queries.append((qid, heading.replace('"', "")))
        qrels[qid] = {doc_id}
        groups[qid] = key
    version = f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
    return _finish(
        "python-docs",
        f"CPython {version} pydoc_data.topics",
        "PSF-2.0",
        docs,
        queries,
        qrels,
        groups,
    )


# --- linux-man ------------------------------------------------------------------------------


def _render(path: Path) -> str:
    env = {**os.environ, "MANWIDTH": "1000", "MAN_KEEP_FORMATTING": "", "GROFF_NO_SGR": "1"}
    out = subprocess.run(
        ["man", "-l", "-P", "cat", "-E", "UTF-8", str(path)],
        capture_output=True,
        env=env,
        check=False,
        timeout=30,
    ).stdout.decode("utf-8", "replace")
    return re.sub(r".\x08", "", out)


def _section(rendered: str, title: str) -> str:
    lines = rendered.splitlines()
    body: list[str] = []
    inside = False
    for line in lines:
        if line and not line[0].isspace() and line.strip().isupper():
            if inside:
                break
            inside = line.strip() == title
            continue
        if inside:
            body.append(line.strip())
    text = re.sub(r"[ \t]+", " ", "\n".join(body))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _summary(raw: str) -> str | None:
    m = re.search(r"^\.SH NAME\s*\n(.+?)(?=^\.SH )", raw, re.M | re.S)
    if not m:
        return None
    line = " ".join(m.group(1).split())
    if "\\-" not in line:
        return None
    summary = line.split("\\-", 1)[1]
    summary = re.sub(r"\\f[BIRP]|\\\(.{2}|\\", "", summary).strip()
    return summary or None


def linux_man() -> EvalSet | None:
    if not MAN2.is_dir() or shutil.which("man") is None:
        return None
    pages = sorted(p for p in MAN2.glob("*.2.gz") if not p.is_symlink())  # links: aliases
    found: list[tuple[str, str, str]] = []
    for page in pages:
        raw = gzip.decompress(page.read_bytes()).decode("utf-8", "replace")
        if raw.lstrip().startswith(".so ") or "\n.so " in raw[:400]:
            continue  # an alias of another page
        summary = _summary(raw)
        if summary is None:
            continue
        description = _section(_render(page), "DESCRIPTION")
        if len(description) < 80:
            continue
        found.append((page.name.removesuffix(".2.gz"), summary, description))
    counts: dict[str, int] = {}
    for _, summary, _ in found:
        counts[summary.lower()] = counts.get(summary.lower(), 0) + 1
    stamps = _timestamps(len(found), 2)
    docs = [Doc(name, d[:MAX_CHARS], stamps[n]) for n, (name, _, d) in enumerate(found)]
    queries: list[tuple[str, str]] = []
    qrels: dict[str, set[str]] = {}
    groups: dict[str, str] = {}
    for name, summary, _ in found:
        if counts[summary.lower()] > 1:
            continue
        qid = f"man:{name}"
        queries.append((qid, summary))
        qrels[qid] = {name}
        groups[qid] = name
    version = _package_version("manpages-dev")
    return _finish(
        "linux-man",
        f"Debian manpages-dev {version} (section 2)",
        "Linux-man-pages-copyleft and others, per page",
        docs,
        queries,
        qrels,
        groups,
    )


def _package_version(package: str) -> str:
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package],
            capture_output=True,
            check=False,
            timeout=30,
        )
    except OSError:
        return "?"
    return out.stdout.decode().strip() or "?"


BUILDERS: dict[str, Callable[[], EvalSet | None]] = {
    "daily-log": daily_log,
    "python-docs": python_docs,
    "linux-man": linux_man,
}
