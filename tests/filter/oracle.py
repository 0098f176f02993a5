"""The differential oracle: cel-python's own evaluator over one memo's fields,
and hypothesis strategies that generate memos and (filter, oracle) text pairs.

Each generated filter comes with the CEL text the oracle evaluates. The two
are identical except for the documented differences between Memos' filter
semantics and standard CEL, all of which are listed here and nowhere else:

1. ``content`` text ops fold case (Memos), CEL's are case-sensitive: the
   oracle writes ``fold(content) <op> "<folded needle>"`` (``fold`` is
   ``app.fold``, the per-code-point simple lowercase mapping).
2. ``now()`` is the old Memos epoch-seconds int, ``now`` a timestamp; and
   ``created_ts`` compared with ints is epoch seconds: the oracle writes
   ``int(created_ts) <op> now() - 86400``.
3. ``timestamp(<int>)`` is not in cel-python: the oracle gets the RFC 3339 text.
4. ``tags.all(t, P)`` is false for an untagged memo (CEL says true): the oracle
   writes ``size(tags) > 0 && tags.all(t, P)``.
5. ``tag in [..]`` (any tag, ancestors included) is ``tags.exists(t, t in [..])``.
6. ``sets.contains/intersects/equivalent`` (cel-go's sets extension) are not in
   cel-python: the oracle calls ``sets_contains`` etc. defined below.
7. ``tree.startsWith("a.b")`` means the subtree: ``tree == "a.b" ||
   tree.startsWith("a.b.")``; a NULL tree is bound to a sentinel no
   generated path equals or starts with.
8. ``tags`` is the stored list: ancestors included, in ``position`` order.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import celpy
import celpy.celtypes as ct
from hypothesis import strategies as st

from app.fold import fold

NOW = 1_750_000_000  # 2025-06-15T15:06:40Z
USERS = {1: "alice", 2: "bob", 3: "carol"}  # creator_id 4 has no user row
NULL_TREE = "\x00null"

_ENV = celpy.Environment()


def _sets_contains(a: ct.ListType, b: ct.ListType) -> ct.BoolType:
    return ct.BoolType(all(x in a for x in b))


def _sets_intersects(a: ct.ListType, b: ct.ListType) -> ct.BoolType:
    return ct.BoolType(any(x in a for x in b))


def _sets_equivalent(a: ct.ListType, b: ct.ListType) -> ct.BoolType:
    return ct.BoolType(set(a) == set(b))


ORACLE_FUNCTIONS: dict[str, Any] = {
    "fold": lambda s: ct.StringType(fold(str(s))),
    "now": lambda: ct.IntType(NOW),
    "sets_contains": _sets_contains,
    "sets_intersects": _sets_intersects,
    "sets_equivalent": _sets_equivalent,
}


@dataclass(frozen=True)
class MemoRow:
    id: int
    content: str
    visibility: str
    creator_id: int
    created_ts: int
    updated_ts: int
    pinned: bool
    has_link: bool
    has_task_list: bool
    has_code: bool
    has_incomplete_tasks: bool
    location: str | None
    tags: tuple[str, ...]  # as written; stored with ancestors
    space_id: int | None
    tree: str | None

    def stored_tags(self) -> list[str]:
        """Tags with ancestors, each ancestor right before its child's first appearance."""
        out: list[str] = []
        for tag in self.tags:
            parts = tag.split("/")
            for i in range(1, len(parts) + 1):
                name = "/".join(parts[:i])
                if name not in out:
                    out.append(name)
        return out


def _ts(seconds: int) -> ct.TimestampType:
    return ct.TimestampType(dt.datetime.fromtimestamp(seconds, tz=dt.UTC))


def activation(row: MemoRow) -> dict[str, Any]:
    return {
        "content": ct.StringType(row.content),
        "visibility": ct.StringType(row.visibility),
        "creator": ct.StringType(f"users/{USERS.get(row.creator_id, '?')}"),
        "creator_id": ct.IntType(row.creator_id),
        "created_ts": _ts(row.created_ts),
        "updated_ts": _ts(row.updated_ts),
        "pinned": ct.BoolType(row.pinned),
        "has_link": ct.BoolType(row.has_link),
        "has_task_list": ct.BoolType(row.has_task_list),
        "has_code": ct.BoolType(row.has_code),
        "has_incomplete_tasks": ct.BoolType(row.has_incomplete_tasks),
        "has_location": ct.BoolType(row.location is not None),
        "tags": ct.ListType([ct.StringType(t) for t in row.stored_tags()]),
        "space": None if row.space_id is None else ct.StringType(f"spaces/{row.space_id}"),
        "tree": ct.StringType(NULL_TREE if row.tree is None else row.tree),
        "now": _ts(NOW),
    }


def oracle_ids(oracle_text: str, rows: list[MemoRow]) -> set[int]:
    program = _ENV.program(_ENV.compile(oracle_text), functions=ORACLE_FUNCTIONS)
    out: set[int] = set()
    for row in rows:
        result = program.evaluate(activation(row))
        if not isinstance(result, ct.BoolType):
            raise AssertionError(f"oracle gave {result!r} for {oracle_text!r} on {row}")
        if result:
            out.add(row.id)
    return out


# ---- generation --------------------------------------------------------------

ALPHABET = list("aAbB xZ%_\\.#\n") + list("ПпРрИиВвЕеТт") + list("中文éÉΣσßİ")
NEEDLE_ALPHABET = list("aAbB%_\\ .") + list("ПпИиВв") + list("中Σσİ")
TAGS = ["work", "work/ops", "book/fiction", "Book", "中文", "a_b", "x%y", "work/ops/db"]
TREES = ["a", "a.b", "a.b.c", "a.bc", "A.b", "b"]
VISIBILITIES = ["PUBLIC", "PROTECTED", "PRIVATE"]
FLAGS = ["pinned", "has_link", "has_task_list", "has_code", "has_incomplete_tasks", "has_location"]
ACCESSORS = [
    "getFullYear",
    "getMonth",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getHours",
    "getMinutes",
    "getSeconds",
]
DURATIONS = {"24h": 86400, "1h30m": 5400, "90s": 90, "1.5h": 5400, "2m30s": 150, "-1h": -3600}
# A regex subset on which RE2 (SQLite UDF, oracle) and PostgreSQL's ARE agree.
REGEXES = ["a", "^a", "b$", "a.b", "[aП]", "^$", "a*b", "(ab|ba)", "П+", "^[^a]*$", "中", "a|%"]


def lit(text: str) -> str:
    """A CEL string literal for ``text``."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) < 0x20:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _list(items: list[str]) -> str:
    return "[" + ", ".join(lit(i) for i in items) + "]"


def _rfc(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


Pair = tuple[str, str]
texts = st.text(alphabet=NEEDLE_ALPHABET, min_size=0, max_size=4)
ops = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])
eq_ops = st.sampled_from(["==", "!="])
timestamps = st.one_of(st.integers(0, 4_102_444_800), st.integers(NOW - 3 * 86400, NOW + 86400))
# Integers at the edges of int4 and int8: every integer-valued term must take
# any int64 on both dialects (PostgreSQL once bound IN values as int4: a 500).
EDGE_INTS = (2**31 - 1, 2**31, 2**32, -(2**31) - 1, 2**63 - 1, -(2**63))


def edgy(small: st.SearchStrategy[int]) -> st.SearchStrategy[int]:
    """``small`` mostly, an int4/int8 edge value sometimes."""
    return st.one_of(small, small, small, st.sampled_from(EDGE_INTS))


@st.composite
def content_leaf(draw: st.DrawFn) -> Pair:
    needle = draw(texts)
    kind = draw(
        st.sampled_from(["contains", "startsWith", "endsWith", "cmp", "in", "matches", "size"])
    )
    if kind in ("contains", "startsWith", "endsWith"):
        return f"content.{kind}({lit(needle)})", f"fold(content).{kind}({lit(fold(needle))})"
    if kind == "cmp":
        op = draw(ops)
        return f"content {op} {lit(needle)}", f"fold(content) {op} {lit(fold(needle))}"
    if kind == "in":
        items = draw(st.lists(texts, max_size=3))
        return f"content in {_list(items)}", f"fold(content) in {_list([fold(i) for i in items])}"
    if kind == "matches":
        pattern = lit(draw(st.sampled_from(REGEXES)))
        return f"content.matches({pattern})", f"content.matches({pattern})"
    if draw(st.booleans()):
        text = f"size(content) {draw(ops)} {draw(edgy(st.integers(0, 12)))}"
    else:
        values = draw(st.lists(edgy(st.integers(0, 12)), max_size=3))
        text = f"size(content) in [{', '.join(map(str, values))}]"
    return text, text


@st.composite
def time_leaf(draw: st.DrawFn) -> Pair:
    field = draw(st.sampled_from(["created_ts", "updated_ts"]))
    op = draw(ops)
    kind = draw(
        st.sampled_from(["now", "rfc", "epoch", "dur", "compat", "int", "accessor", "fields"])
    )
    if kind == "now":
        now = draw(st.sampled_from(["now", "now()"]))
        if now == "now()":
            return f"{field} {op} now()", f"int({field}) {op} now()"
        return f"{field} {op} now", f"{field} {op} now"
    if kind == "rfc":
        t = lit(_rfc(draw(timestamps)))
        return f"{field} {op} timestamp({t})", f"{field} {op} timestamp({t})"
    if kind == "epoch":
        seconds = draw(timestamps)
        return f"{field} {op} timestamp({seconds})", f"{field} {op} timestamp({lit(_rfc(seconds))})"
    if kind == "dur":
        dur = lit(draw(st.sampled_from(sorted(DURATIONS))))
        sign = draw(st.sampled_from(["-", "+"]))
        return (
            f"{field} {op} now {sign} duration({dur})",
            f"{field} {op} now {sign} duration({dur})",
        )
    if kind == "compat":
        delta = draw(st.sampled_from([86400, 3600, 0, 7 * 86400]))
        return f"{field} {op} now() - {delta}", f"int({field}) {op} now() - {delta}"
    if kind == "int":
        seconds = draw(edgy(timestamps))
        return f"{field} {op} {seconds}", f"int({field}) {op} {seconds}"
    if kind == "fields":
        return f"created_ts {op} updated_ts", f"created_ts {op} updated_ts"
    accessor = draw(st.sampled_from(ACCESSORS))
    value = draw(edgy(st.integers(0, 60) | st.sampled_from([1970, 2000, 2024, 2025, 2099])))
    if draw(st.integers(0, 3)) == 0:
        values = draw(st.lists(edgy(st.integers(0, 60)), max_size=3))
        text = f"{field}.{accessor}() in [{', '.join(map(str, values))}]"
        return text, text
    text = f"{field}.{accessor}() {op} {value}"
    return text, text


@st.composite
def tag_leaf(draw: st.DrawFn) -> Pair:
    tag_names = st.sampled_from([*TAGS, "book", "work/o", "ops"])
    kind = draw(st.sampled_from(["in_tags", "size", "quant", "sets", "tag_in"]))
    if kind == "in_tags":
        text = f"{lit(draw(tag_names))} in tags"
        return text, text
    if kind == "size":
        if draw(st.booleans()):
            text = f"size(tags) {draw(ops)} {draw(edgy(st.integers(0, 4)))}"
        else:
            values = draw(st.lists(edgy(st.integers(0, 4)), max_size=3))
            text = f"size(tags) in [{', '.join(map(str, values))}]"
        return text, text
    if kind == "quant":
        quantifier = draw(st.sampled_from(["exists", "all", "exists_one"]))
        value = lit(draw(st.sampled_from(["work", "wo", "ops", "o", "Book", "%", "_", "", "中"])))
        form = draw(st.sampled_from(["==", "startsWith", "endsWith", "contains"]))
        pred = f"t == {value}" if form == "==" else f"t.{form}({value})"
        text = f"tags.{quantifier}(t, {pred})"
        if quantifier == "all":
            return text, f"(size(tags) > 0 && {text})"
        return text, text
    items = _list(draw(st.lists(tag_names, max_size=3)))
    if kind == "sets":
        fn = draw(st.sampled_from(["contains", "intersects", "equivalent"]))
        return f"sets.{fn}(tags, {items})", f"sets_{fn}(tags, {items})"
    return f"tag in {items}", f"tags.exists(t, t in {items})"


@st.composite
def other_leaf(draw: st.DrawFn) -> Pair:
    kind = draw(
        st.sampled_from(["flag", "visibility", "creator", "creator_id", "space", "tree", "const"])
    )
    if kind == "flag":
        flag = draw(st.sampled_from(FLAGS))
        form = draw(st.sampled_from(["{f}", "!{f}", "{f} == true", "{f} == false", "{f} != true"]))
        text = form.format(f=flag)
        return text, text
    if kind == "visibility":
        if draw(st.booleans()):
            text = f"visibility {draw(eq_ops)} {lit(draw(st.sampled_from(VISIBILITIES)))}"
        else:
            text = (
                f"visibility in {_list(draw(st.lists(st.sampled_from(VISIBILITIES), max_size=2)))}"
            )
        return text, text
    if kind == "creator":
        name = draw(st.sampled_from(["alice", "bob", "zed"]))
        text = f"creator {draw(eq_ops)} {lit('users/' + name)}"
        return text, text
    if kind == "creator_id":
        if draw(st.booleans()):
            text = f"creator_id {draw(eq_ops)} {draw(edgy(st.integers(1, 4)))}"
        else:
            ids = draw(st.lists(edgy(st.integers(1, 4)), max_size=3))
            text = f"creator_id in [{', '.join(map(str, ids))}]"
        return text, text
    if kind == "space":
        text = f"space {draw(eq_ops)} null"
        return text, text
    if kind == "tree":
        path = draw(st.sampled_from(TREES))
        if draw(st.booleans()):
            return f"tree == {lit(path)}", f"tree == {lit(path)}"
        return (
            f"tree.startsWith({lit(path)})",
            f"(tree == {lit(path)} || tree.startsWith({lit(path + '.')}))",
        )
    text = draw(
        st.sampled_from(["true", "false", "1 + 2 == 3", "creator_id == 100 / 50", "!(2 > 1)"])
    )
    return text, text


leaves = st.one_of(content_leaf(), time_leaf(), tag_leaf(), other_leaf())


def _combine(children: st.SearchStrategy[Pair]) -> st.SearchStrategy[Pair]:
    def join(op: str) -> st.SearchStrategy[Pair]:
        return st.tuples(children, children).map(
            lambda ab: (f"({ab[0][0]}) {op} ({ab[1][0]})", f"({ab[0][1]}) {op} ({ab[1][1]})")
        )

    return st.one_of(join("&&"), join("||"), children.map(lambda a: (f"!({a[0]})", f"!({a[1]})")))


filters = st.recursive(leaves, _combine, max_leaves=5)


@st.composite
def memo_rows(draw: st.DrawFn) -> list[MemoRow]:
    count = draw(st.integers(1, 12))
    rows = []
    for i in range(1, count + 1):
        created = draw(timestamps)
        rows.append(
            MemoRow(
                id=i,
                content=draw(st.text(alphabet=ALPHABET, max_size=16)),
                visibility=draw(st.sampled_from(VISIBILITIES)),
                creator_id=draw(st.integers(1, 4)),
                created_ts=created,
                updated_ts=created + draw(st.sampled_from([0, 1, 3600, 86400 * 40])),
                pinned=draw(st.booleans()),
                has_link=draw(st.booleans()),
                has_task_list=draw(st.booleans()),
                has_code=draw(st.booleans()),
                has_incomplete_tasks=draw(st.booleans()),
                location=draw(st.sampled_from([None, "here"])),
                tags=tuple(draw(st.lists(st.sampled_from(TAGS), max_size=3, unique=True))),
                space_id=draw(st.sampled_from([None, 1])),
                tree=draw(st.sampled_from([None, *TREES])),
            )
        )
    return rows
