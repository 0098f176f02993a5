"""Lark tree to IR: type checking against a schema, constant folding, rejection.

cel-python has no type checker, so this is it. Every identifier, operator and
call is checked against the schema of the target (memos or attachments) and
anything not in the contract (docs: filter.md) is refused with the offset of
the offending node. Nothing here touches a database or the request clock.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping
from typing import Literal, cast

import lark
import re2

from app.filter import literals
from app.filter.errors import FilterError
from app.filter.ir import (
    Accessor,
    BoolConst,
    CompareOp,
    Creator,
    Flag,
    IntCompare,
    IntConst,
    IntField,
    IntIn,
    IsNull,
    MemoRef,
    Pred,
    Regex,
    SpaceIs,
    TagAny,
    TagHas,
    TagOnly,
    TagQuant,
    TextCompare,
    TextIn,
    TextMatch,
    Tree,
    TsCompare,
    conj,
    disj,
    neg,
)
from app.filter.values import (
    FieldKind,
    Value,
    VBool,
    VDur,
    VField,
    VInt,
    VList,
    VNamespace,
    VNull,
    VStr,
    VTagPred,
    VTags,
    VTagVar,
    VTs,
    type_name,
)

N = literals.NANOS

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a bad user pattern is a 400, not a log line

Target = Literal["memo", "attachment"]

# A space id as ``app.api.structs.UID_RE`` spells it (filter/ imports nothing above it).
_SPACE_UID_RE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,34}[a-zA-Z0-9])?\Z")

# name -> kind; "flag", "int", "ts", "tags", "now" are handled specially.
MEMO_SCHEMA: Mapping[str, str] = {
    "content": "text",
    "visibility": "enum",
    "creator": "creator",
    "creator_id": "int",
    "created_ts": "ts",
    "updated_ts": "ts",
    "pinned": "flag",
    "has_task_list": "flag",
    "has_link": "flag",
    "has_code": "flag",
    "has_incomplete_tasks": "flag",
    "has_location": "flag",
    "tags": "tags",
    "tag": "tag",
    "space": "space",
    "tree": "tree",
    "now": "now",
}
ATTACHMENT_SCHEMA: Mapping[str, str] = {
    "filename": "text",
    "mime_type": "exact_text",
    "create_time": "ts",
    "memo_id": "memo_ref",
    "now": "now",
}
SCHEMAS: Mapping[Target, Mapping[str, str]] = {"memo": MEMO_SCHEMA, "attachment": ATTACHMENT_SCHEMA}

ACCESSORS: frozenset[str] = frozenset(
    [
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
)
_FLIP: Mapping[str, CompareOp] = {
    "==": "==",
    "!=": "!=",
    "<": ">",
    "<=": ">=",
    ">": "<",
    ">=": "<=",
}
_REL_OPS: Mapping[str, str] = {
    "relation_eq": "==",
    "relation_ne": "!=",
    "relation_lt": "<",
    "relation_le": "<=",
    "relation_gt": ">",
    "relation_ge": ">=",
    "relation_in": "in",
}
_ARITH_OPS: Mapping[str, str] = {
    "addition_add": "+",
    "addition_sub": "-",
    "multiplication_mul": "*",
    "multiplication_div": "/",
    "multiplication_mod": "%",
}
_PASS_THROUGH = frozenset(
    [
        "expr",
        "conditionalor",
        "conditionaland",
        "relation",
        "addition",
        "multiplication",
        "unary",
        "member",
        "primary",
    ]
)

Node = lark.Tree[lark.Token] | lark.Token


def start(node: Node) -> int:
    if isinstance(node, lark.Token):
        return node.start_pos or 0
    meta = node.meta
    return 0 if meta.empty else meta.start_pos


def _end(node: Node) -> int:
    if isinstance(node, lark.Token):
        return node.end_pos or 0
    meta = node.meta
    return 0 if meta.empty else meta.end_pos


def _cmp_const(op: str, a: object, b: object) -> bool:
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    x, y = cast(int, a), cast(int, b)
    return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]


def _ts_bound(op: CompareOp, x: int) -> tuple[CompareOp, int] | bool:
    """Rewrite ``D*N op x`` (integer seconds D, nanoseconds x) as ``D op' k`` or a constant."""
    floor, rem = divmod(x, N)
    ceil = floor + (1 if rem else 0)
    if op == ">":
        return (">", floor)
    if op == ">=":
        return (">=", ceil)
    if op == "<":
        return ("<", ceil)
    if op == "<=":
        return ("<=", floor)
    if rem:
        return op == "!="
    return (op, floor)


# Escapes both RE2 and PostgreSQL's ARE read the same way; anything else
# (\b is a word boundary in RE2 but a backspace in PostgreSQL, \pL, \Q..\E,
# \z, ...) is refused rather than allowed to mean two things or to fail in SQL.
_REGEX_ESCAPES = frozenset("dDsSwWnt.\\*+?()[]{}|^$-/")


def _portable_regex_problem(pattern: str) -> tuple[str, int] | None:
    """The first construct RE2 and PostgreSQL would read differently, with its index."""
    i, in_class, prev = 0, False, ""
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1 : i + 2]
            if nxt not in _REGEX_ESCAPES or not nxt:
                return (f"unsupported regex escape '\\{nxt}'", i)
            if in_class and nxt in "dDsSwW" and pattern[i + 2 : i + 3] == "-":
                return ("a class escape cannot end a range", i)
            i, prev = i + 2, "\\"
            continue
        if in_class:
            in_class = ch != "]" or prev == "["
            prev = ch if not (prev == "[" and ch == "^") else "["
            i += 1
            continue
        if ch == "[":
            in_class, prev = True, "["
            i += 1
            continue
        if pattern.startswith("(?", i) and not pattern.startswith("(?:", i):
            return ("unsupported regex group syntax '(?'", i)
        if ch in "*+?{" and prev in ("^", "$"):
            return ("a quantifier cannot follow an anchor", i)
        if ch == "{":
            close = pattern.find("}", i)
            counts = pattern[i + 1 : close].split(",") if close > 0 else []
            if any(c.isdigit() and int(c) > 255 for c in counts):
                return ("regex repetition counts above 255 are not supported", i)
        prev = ch
        i += 1
    return None


def _accessor_of(nanos: int, name: str) -> int:
    moment = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=nanos // N)
    return {
        "getFullYear": moment.year,
        "getMonth": moment.month - 1,
        "getDate": moment.day,
        "getDayOfMonth": moment.day - 1,
        "getDayOfWeek": (moment.weekday() + 1) % 7,
        "getDayOfYear": moment.timetuple().tm_yday - 1,
        "getHours": moment.hour,
        "getMinutes": moment.minute,
        "getSeconds": moment.second,
    }[name]


class Lowerer:
    """One use per filter: ``Lowerer(text, target).lower(tree)``."""

    def __init__(self, text: str, target: Target) -> None:
        self.text = text
        self.schema = SCHEMAS[target]
        self.target = target
        self.comprehension_var: str | None = None

    # ---- entry ---------------------------------------------------------------

    def lower(self, tree: Node) -> Pred:
        value = self.expr(tree)
        if isinstance(value, VTagPred | VTagVar):
            raise FilterError("comprehension variable used outside a comprehension", value.at)
        if not isinstance(value, VBool):
            raise FilterError(
                f"filter must be a boolean expression, got {type_name(value)}", start(tree)
            )
        return value.pred

    # ---- helpers -------------------------------------------------------------

    def _op_offset(self, left: Node) -> int:
        pos = _end(left)
        while pos < len(self.text) and self.text[pos].isspace():
            pos += 1
        return pos

    def _bool(self, value: Value) -> Pred:
        if isinstance(value, VTagPred):
            raise FilterError("unsupported comprehension predicate", value.at)
        if not isinstance(value, VBool):
            raise FilterError(f"expected a boolean, got {type_name(value)}", value.at)
        return value.pred

    @staticmethod
    def _is_const(value: Value) -> bool:
        if isinstance(value, VInt):
            return isinstance(value.term, IntConst)
        if isinstance(value, VBool):
            return isinstance(value.pred, BoolConst)
        if isinstance(value, VTs):
            return value.field is None and not value.now
        return isinstance(value, VStr | VNull | VDur | VList)

    @staticmethod
    def _const(value: Value) -> object:
        if isinstance(value, VInt) and isinstance(value.term, IntConst):
            return value.term.value
        if isinstance(value, VBool) and isinstance(value.pred, BoolConst):
            return value.pred.value
        if isinstance(value, VStr):
            return value.value
        if isinstance(value, VTs):
            return ("ts", value.offset)
        if isinstance(value, VDur):
            return ("dur", value.nanos)
        return None

    def _int(self, value: int, at: int) -> int:
        try:
            return literals.check_int64(value)
        except ValueError as exc:
            raise FilterError(str(exc), at) from None

    # ---- dispatch ------------------------------------------------------------

    def expr(self, node: Node) -> Value:
        while (
            isinstance(node, lark.Tree) and node.data in _PASS_THROUGH and len(node.children) == 1
        ):
            node = node.children[0]
        if isinstance(node, lark.Token):
            raise FilterError("unexpected token", start(node))
        kind = node.data
        handler: Callable[[lark.Tree[lark.Token]], Value] | None = getattr(self, f"_n_{kind}", None)
        if handler is None:
            raise FilterError(f"unsupported syntax ({kind})", start(node))
        return handler(node)

    def _n_expr(self, node: lark.Tree[lark.Token]) -> Value:
        raise FilterError("the conditional operator ?: is not supported", start(node))

    def _logical(self, node: lark.Tree[lark.Token], kind: str) -> Value:
        operands: list[Node] = []
        cur: Node = node
        # Left-recursive chains are flattened iteratively: `a && b && ...` stays shallow.
        while isinstance(cur, lark.Tree) and cur.data == kind and len(cur.children) == 2:
            operands.append(cur.children[1])
            cur = cur.children[0]
        operands.append(cur)
        preds = [self._bool(self.expr(child)) for child in reversed(operands)]
        pred = conj(preds) if kind == "conditionaland" else disj(preds)
        return VBool(pred, start(node))

    def _n_conditionalor(self, node: lark.Tree[lark.Token]) -> Value:
        return self._logical(node, "conditionalor")

    def _n_conditionaland(self, node: lark.Tree[lark.Token]) -> Value:
        return self._logical(node, "conditionaland")

    def _n_paren_expr(self, node: lark.Tree[lark.Token]) -> Value:
        return self.expr(node.children[0])

    def _n_unary(self, node: lark.Tree[lark.Token]) -> Value:
        ops: list[str] = []
        cur: Node = node
        while isinstance(cur, lark.Tree) and cur.data == "unary" and len(cur.children) == 2:
            op_node = cur.children[0]
            ops.append(op_node.data if isinstance(op_node, lark.Tree) else str(op_node))
            cur = cur.children[1]
        value = self.expr(cur)
        for op in reversed(ops):
            at = start(node)
            if op == "unary_not":
                value = VBool(neg(self._bool(value)), at)
            elif isinstance(value, VInt) and isinstance(value.term, IntConst):
                value = VInt(IntConst(self._int(-value.term.value, at)), at)
            elif isinstance(value, VDur):
                value = VDur(-value.nanos, at)
            else:
                raise FilterError(f"cannot negate {type_name(value)}", at)
        return value

    # ---- literals and identifiers --------------------------------------------

    def _n_literal(self, node: lark.Tree[lark.Token]) -> Value:
        token = node.children[0]
        assert isinstance(token, lark.Token)
        at = start(token)
        try:
            if token.type in ("STRING_LIT", "MLSTRING_LIT"):
                return VStr(literals.decode_string(token), at)
            if token.type == "INT_LIT":
                return VInt(IntConst(literals.decode_int(token)), at)
            if token.type == "BOOL_LIT":
                return VBool(BoolConst(token.value == "true"), at)
            if token.type == "NULL_LIT":
                return VNull(at)
        except (ValueError, OverflowError) as exc:
            raise FilterError(f"invalid literal: {exc}", at) from None
        kind = {
            "UINT_LIT": "unsigned integers",
            "FLOAT_LIT": "floating-point numbers",
            "BYTES_LIT": "bytes",
        }
        raise FilterError(f"{kind.get(token.type, 'this literal')} not supported", at)

    def _n_list_lit(self, node: lark.Tree[lark.Token]) -> Value:
        at = start(node)
        items: list[str | int | bool] = []
        kinds: set[type] = set()
        if node.children and node.children[0] is not None:
            exprlist = node.children[0]
            assert isinstance(exprlist, lark.Tree)
            for child in exprlist.children:
                value = self.expr(child)
                const = self._const(value)
                if not isinstance(value, VStr | VInt | VBool) or not isinstance(const, str | int):
                    raise FilterError(
                        "list elements must be string, int or bool literals", start(child)
                    )
                items.append(const)
                kinds.add(type(const))
        if len(kinds) > 1:
            raise FilterError("list elements must all have the same type", at)
        return VList(tuple(items), at)

    def _n_map_lit(self, node: lark.Tree[lark.Token]) -> Value:
        raise FilterError("maps are not supported", start(node))

    def _n_ident(self, node: lark.Tree[lark.Token]) -> Value:
        token = node.children[0]
        assert isinstance(token, lark.Token)
        return self._ident(str(token), start(token))

    def _ident(self, name: str, at: int) -> Value:
        if self.comprehension_var is not None and name == self.comprehension_var:
            return VTagVar(at)
        kind = self.schema.get(name)
        if kind is None:
            if name == "sets" and self.target == "memo":
                return VNamespace(name, at)
            raise FilterError(f"unknown identifier '{name}'", at)
        if kind == "flag":
            return VBool(Flag(name), at)
        if kind == "int":
            return VInt(IntField(name), at)
        if kind == "ts":
            return VTs(at, field=name)
        if kind == "now":
            return VTs(at, now=True)
        if kind == "tags":
            return VTags(at)
        return VField(name, cast(FieldKind, kind), at)

    def _n_member_dot(self, node: lark.Tree[lark.Token]) -> Value:
        name = node.children[1]
        raise FilterError(f"unknown field '{name}'", start(name))

    def _n_member_index(self, node: lark.Tree[lark.Token]) -> Value:
        raise FilterError("indexing is not supported", start(node))

    def _n_member_object(self, node: lark.Tree[lark.Token]) -> Value:
        raise FilterError("message construction is not supported", start(node))

    def _n_dot_ident(self, node: lark.Tree[lark.Token]) -> Value:
        raise FilterError("qualified names are not supported", start(node))

    _n_dot_ident_arg = _n_dot_ident

    # ---- operators -----------------------------------------------------------

    def _binary(self, node: lark.Tree[lark.Token]) -> tuple[str, Node, Node, int]:
        op_node, right = node.children
        assert isinstance(op_node, lark.Tree)
        left = op_node.children[0]
        return op_node.data, left, right, self._op_offset(left)

    def _n_relation(self, node: lark.Tree[lark.Token]) -> Value:
        kind, left_node, right_node, at = self._binary(node)
        left, right = self.expr(left_node), self.expr(right_node)
        op = _REL_OPS[kind]
        if op == "in":
            return self._in(left, right, at)
        return self._compare(cast(CompareOp, op), left, right, at)

    def _n_addition(self, node: lark.Tree[lark.Token]) -> Value:
        kind, left_node, right_node, at = self._binary(node)
        return self._arith(_ARITH_OPS[kind], self.expr(left_node), self.expr(right_node), at)

    _n_multiplication = _n_addition

    def _arith(self, op: str, left: Value, right: Value, at: int) -> Value:
        if isinstance(left, VInt) and isinstance(right, VInt):
            if not (isinstance(left.term, IntConst) and isinstance(right.term, IntConst)):
                raise FilterError("arithmetic on fields is not supported", at)
            a, b = left.term.value, right.term.value
            if op in "/%" and b == 0:
                raise FilterError("division by zero" if op == "/" else "modulo by zero", at)
            if op == "+":
                result = a + b
            elif op == "-":
                result = a - b
            elif op == "*":
                result = a * b
            else:
                quotient = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
                result = quotient if op == "/" else a - b * quotient
            return VInt(IntConst(self._int(result, at)), left.at)
        if isinstance(left, VStr) and isinstance(right, VStr) and op == "+":
            if len(left.value) + len(right.value) > literals.INT64_MAX:
                raise FilterError("string too long", at)
            return VStr(left.value + right.value, left.at)
        if op in "+-":
            sign = 1 if op == "+" else -1
            if isinstance(left, VTs) and isinstance(right, VDur):
                return self._shift(left, sign * right.nanos, at)
            if (
                isinstance(left, VTs)
                and isinstance(right, VInt)
                and isinstance(right.term, IntConst)
            ):
                # compatibility: `now() - 86400` counts seconds
                return self._shift(left, sign * right.term.value * N, at)
            if isinstance(left, VDur) and isinstance(right, VTs) and op == "+":
                return self._shift(right, left.nanos, at)
            if isinstance(left, VDur) and isinstance(right, VDur):
                nanos = left.nanos + sign * right.nanos
                if abs(nanos) > literals.DUR_MAX_NS:
                    raise FilterError("duration out of range", at)
                return VDur(nanos, left.at)
        raise FilterError(
            f"operator '{op}' not supported between {type_name(left)} and {type_name(right)}", at
        )

    def _shift(self, ts: VTs, nanos: int, at: int) -> VTs:
        offset = ts.offset + nanos
        if (
            ts.field is None
            and not ts.now
            and not literals.TS_MIN_NS <= offset <= literals.TS_MAX_NS
        ):
            raise FilterError("timestamp out of range", at)
        if abs(offset) > 2 * literals.INT64_MAX:
            raise FilterError("timestamp offset out of range", at)
        return VTs(ts.at, offset, ts.field, ts.now)

    # ---- comparisons ---------------------------------------------------------

    def _compare(self, op: CompareOp, left: Value, right: Value, at: int) -> Value:
        for v in (left, right):
            if isinstance(v, VTagPred):
                raise FilterError("unsupported comprehension predicate", v.at)
            if isinstance(v, VList | VTags | VNamespace):
                raise FilterError(f"cannot compare a {type_name(v)} with '{op}'", at)
        if isinstance(left, VTagVar) or isinstance(right, VTagVar):
            other = right if isinstance(left, VTagVar) else left
            if op == "==" and isinstance(other, VStr):
                return VTagPred("==", other.value, at)
            raise FilterError("unsupported comprehension predicate", at)
        if self._is_const(left) and not self._is_const(right):
            left, right, op = right, left, _FLIP[op]
        if self._is_const(left) and self._is_const(right):
            return self._compare_consts(op, left, right, at)
        if isinstance(left, VBool):
            return self._compare_bools(op, left, right, at)
        if isinstance(left, VTs) or isinstance(right, VTs):
            return self._compare_ts(op, left, right, at)
        if isinstance(left, VInt):
            if not isinstance(right, VInt):
                raise FilterError(f"cannot compare int with {type_name(right)}", at)
            assert isinstance(left.term, IntField)
            if left.term.field == "creator_id" and op not in ("==", "!="):
                raise FilterError(f"creator_id does not support '{op}'", at)
            return VBool(IntCompare(left.term, op, right.term), left.at)
        if isinstance(left, VField):
            return self._compare_field(op, left, right, at)
        raise FilterError(f"cannot compare {type_name(left)} with {type_name(right)}", at)

    def _compare_consts(self, op: CompareOp, left: Value, right: Value, at: int) -> Value:
        a, b = self._const(left), self._const(right)
        if isinstance(left, VNull) or isinstance(right, VNull):
            if op not in ("==", "!="):
                raise FilterError(f"cannot order null with '{op}'", at)
            same = isinstance(left, VNull) and isinstance(right, VNull)
            return VBool(BoolConst(same == (op == "==")), left.at)
        if isinstance(left, VList) or type(left) is not type(right):
            raise FilterError(f"cannot compare {type_name(left)} with {type_name(right)}", at)
        if isinstance(left, VBool) and op not in ("==", "!="):
            raise FilterError(f"bool does not support '{op}'", at)
        if isinstance(a, tuple) and isinstance(b, tuple):
            a, b = a[1], b[1]
        return VBool(BoolConst(_cmp_const(op, a, b)), left.at)

    def _compare_bools(self, op: CompareOp, left: VBool, right: Value, at: int) -> Value:
        if not isinstance(right, VBool):
            raise FilterError(f"cannot compare bool with {type_name(right)}", at)
        if op not in ("==", "!="):
            raise FilterError(f"bool does not support '{op}'", at)
        a, b = left.pred, right.pred
        if isinstance(b, BoolConst):
            same = a if b.value else neg(a)
        else:
            same = disj([conj([a, b]), conj([neg(a), neg(b)])])
        return VBool(same if op == "==" else neg(same), left.at)

    def _as_ts(self, value: Value, at: int) -> VTs:
        if isinstance(value, VTs):
            return value
        if isinstance(value, VInt) and isinstance(value.term, IntConst):
            # compatibility: `created_ts > 1700000000` compares epoch seconds
            return VTs(value.at, value.term.value * N)
        raise FilterError(f"cannot compare a timestamp with {type_name(value)}", at)

    def _compare_ts(self, op: CompareOp, left: Value, right: Value, at: int) -> Value:
        lts, rts = self._as_ts(left, at), self._as_ts(right, at)
        if lts.field is None:
            lts, rts, op = rts, lts, _FLIP[op]
        if lts.field is None:
            raise FilterError("a timestamp comparison must involve a timestamp field", at)
        if lts.now or (rts.now and rts.field):
            raise FilterError("unsupported timestamp expression", at)
        bound = _ts_bound(op, rts.offset - lts.offset)
        if isinstance(bound, bool):
            return VBool(BoolConst(bound), lts.at)
        new_op, delta = bound
        pred = TsCompare(lts.field, new_op, delta, from_now=rts.now, other_field=rts.field)
        return VBool(pred, lts.at)

    def _compare_field(self, op: CompareOp, field: VField, other: Value, at: int) -> Value:
        kind, name = field.kind, field.name
        if isinstance(other, VNull):
            if kind not in ("space", "memo_ref"):
                raise FilterError(f"{name} cannot be compared with null", at)
            if op not in ("==", "!="):
                raise FilterError(f"{name} does not support '{op}'", at)
            pred: Pred = IsNull(name)
            return VBool(pred if op == "==" else neg(pred), field.at)
        if not isinstance(other, VStr):
            if isinstance(other, VField | VTs | VInt) and not self._is_const(other):
                raise FilterError("the other side of a comparison must be a literal", at)
            raise FilterError(f"cannot compare {name} with {type_name(other)}", at)
        value = other.value
        ordering = op not in ("==", "!=")
        if kind == "text":
            return VBool(TextCompare(name, op, value, folded=True), field.at)
        if kind == "tag":
            raise FilterError("tag only supports 'tag in [...]'", at)
        if ordering:
            raise FilterError(f"{name} does not support '{op}'", at)
        if kind in ("exact_text", "enum"):
            pred = TextCompare(name, "==", value, folded=False)
        elif kind == "creator":
            username = value.removeprefix("users/")
            if not value.startswith("users/") or not username or "/" in username:
                raise FilterError('creator must be compared with "users/{username}"', other.at)
            pred = Creator(username)
        elif kind == "tree":
            pred = Tree(value, subtree=False)
        elif kind == "space":
            uid = value.removeprefix("spaces/")
            if not value.startswith("spaces/") or not _SPACE_UID_RE.fullmatch(uid):
                raise FilterError('space must be compared with "spaces/{id}" or null', other.at)
            pred = SpaceIs(uid)
        else:  # memo_ref
            uid = value.removeprefix("memos/")
            if not uid or "/" in uid:
                raise FilterError('memo_id must be compared with "memos/{uid}" or null', other.at)
            pred = MemoRef(uid)
        return VBool(pred if op == "==" else neg(pred), field.at)

    def _in(self, left: Value, right: Value, at: int) -> Value:
        if isinstance(right, VTags):
            if isinstance(left, VStr):
                return VBool(TagHas(left.value), left.at)
            raise FilterError("the left side of 'in tags' must be a string literal", left.at)
        if not isinstance(right, VList):
            raise FilterError(f"'in' needs a list literal on the right, got {type_name(right)}", at)
        items = right.items
        if self._is_const(left):
            const = self._const(left)
            if not isinstance(left, VStr | VInt | VBool) or (
                items and type(const) is not type(items[0])
            ):
                raise FilterError(f"cannot look up {type_name(left)} in this list", at)
            return VBool(BoolConst(const in items), left.at)
        expect: type = str
        pred: Pred
        if isinstance(left, VInt):
            assert isinstance(left.term, IntField)
            expect = int
            pred = IntIn(left.term, cast(tuple[int, ...], items))
        elif isinstance(left, VField) and left.kind in ("text", "exact_text", "enum", "tag"):
            values = cast(tuple[str, ...], items)
            if left.kind == "tag":
                pred = TagAny(values)
            else:
                pred = TextIn(left.name, values, folded=left.kind == "text")
        else:
            name = left.name if isinstance(left, VField) else type_name(left)
            if isinstance(left, VBool) and isinstance(left.pred, Flag):
                name = left.pred.field
            raise FilterError(f"{name} does not support 'in'", at)
        if items and not all(type(item) is expect for item in items):
            raise FilterError(f"list elements must be {expect.__name__}s", right.at)
        if not items:
            return VBool(BoolConst(False), left.at)
        return VBool(pred, left.at)

    # ---- calls ---------------------------------------------------------------

    def _args(self, node: lark.Tree[lark.Token], index: int) -> list[Node]:
        if len(node.children) > index and node.children[index] is not None:
            exprlist = node.children[index]
            assert isinstance(exprlist, lark.Tree)
            return list(exprlist.children)
        return []

    def _n_ident_arg(self, node: lark.Tree[lark.Token]) -> Value:
        name_tok = node.children[0]
        assert isinstance(name_tok, lark.Token)
        name, at = str(name_tok), start(name_tok)
        args = self._args(node, 1)
        if name == "now":
            if args:
                raise FilterError("now() takes no arguments", start(args[0]))
            return VTs(at, now=True)
        if name == "has":
            raise FilterError("has() is not supported: use the has_* flags", at)
        if name in ("size", "timestamp", "duration"):
            if len(args) != 1:
                raise FilterError(f"{name}() takes exactly one argument", at)
            arg = self.expr(args[0])
            if name == "size":
                return self._size(arg, at)
            return self._convert(name, arg, start(args[0]))
        raise FilterError(f"unknown function '{name}'", at)

    def _size(self, arg: Value, at: int) -> Value:
        if isinstance(arg, VTags):
            return VInt(IntField("size_tags"), at)
        if isinstance(arg, VField) and arg.kind == "text":
            return VInt(IntField(f"size_{arg.name}"), at)
        if isinstance(arg, VStr):
            return VInt(IntConst(len(arg.value)), at)
        if isinstance(arg, VList):
            return VInt(IntConst(len(arg.items)), at)
        raise FilterError(f"size() is not supported on {type_name(arg)}", arg.at)

    def _convert(self, name: str, arg: Value, at: int) -> Value:
        try:
            if name == "duration":
                if not isinstance(arg, VStr):
                    raise FilterError("duration() takes a string literal", at)
                return VDur(literals.parse_duration(arg.value), at)
            if isinstance(arg, VStr):
                return VTs(at, literals.parse_timestamp(arg.value))
            if isinstance(arg, VInt) and isinstance(arg.term, IntConst):
                return VTs(at, literals.epoch_seconds_to_ns(arg.term.value))
            if isinstance(arg, VTs):
                return arg
        except ValueError as exc:
            raise FilterError(f"invalid {name}: {exc}", at) from None
        raise FilterError("timestamp() takes an RFC 3339 string or epoch seconds", at)

    def _n_member_dot_arg(self, node: lark.Tree[lark.Token]) -> Value:
        receiver_node, method_tok = node.children[0], node.children[1]
        assert isinstance(method_tok, lark.Token)
        method, at = str(method_tok), start(method_tok)
        args = self._args(node, 2)
        receiver = self.expr(receiver_node)
        if isinstance(receiver, VNamespace):
            return self._sets(method, args, at)
        if isinstance(receiver, VTagVar) and method not in ("contains", "startsWith", "endsWith"):
            raise FilterError("unsupported comprehension predicate", at)
        if method in ("exists", "all", "exists_one"):
            return self._comprehension(receiver, method, args, at)
        if method in ACCESSORS:
            return self._accessor(receiver, method, args, at)
        if method == "size":
            if args:
                raise FilterError("size() takes no arguments here", start(args[0]))
            return self._size(receiver, at)
        if method in ("contains", "startsWith", "endsWith", "matches"):
            if len(args) != 1:
                raise FilterError(f"{method}() takes exactly one argument", at)
            arg = self.expr(args[0])
            if not isinstance(arg, VStr):
                raise FilterError(
                    f"the argument of {method}() must be a string literal", start(args[0])
                )
            return self._text_method(receiver, method, arg, at)
        if method in ("getMilliseconds",):
            raise FilterError(f"{method}() is not supported", at)
        raise FilterError(f"unknown function '{method}'", at)

    def _text_method(self, receiver: Value, method: str, arg: VStr, at: int) -> Value:
        value = arg.value
        if isinstance(receiver, VTagVar):
            if method == "matches":
                raise FilterError("unsupported comprehension predicate", at)
            return VTagPred(
                cast(Literal["contains", "startsWith", "endsWith"], method), value, receiver.at
            )
        if method == "matches":
            try:
                re2.compile(value, _RE2_OPTIONS)
            except Exception as exc:  # re2.error and friends: a malformed pattern
                reason = exc.args[0] if exc.args else exc
                if isinstance(reason, bytes):
                    reason = reason.decode("utf-8", "replace")
                raise FilterError(f"invalid regular expression: {reason}", arg.at) from None
            problem = _portable_regex_problem(value)
            if problem is not None:
                raise FilterError(problem[0], arg.at)
        if isinstance(receiver, VStr):
            s = receiver.value
            if method == "matches":
                return VBool(BoolConst(re2.search(value, s) is not None), receiver.at)
            result = {
                "contains": value in s,
                "startsWith": s.startswith(value),
                "endsWith": s.endswith(value),
            }
            return VBool(BoolConst(result[method]), receiver.at)
        if isinstance(receiver, VField) and receiver.kind == "tree" and method == "startsWith":
            return VBool(Tree(value, subtree=True), receiver.at)
        if not isinstance(receiver, VField) or receiver.kind not in ("text", "exact_text"):
            name = receiver.name if isinstance(receiver, VField) else type_name(receiver)
            raise FilterError(f"{method}() is a text match and {name} is not a text field", at)
        if method == "matches":
            return VBool(Regex(receiver.name, value), receiver.at)
        if value == "":
            return VBool(BoolConst(True), receiver.at)
        op = cast(Literal["contains", "startsWith", "endsWith"], method)
        return VBool(
            TextMatch(receiver.name, op, value, folded=receiver.kind == "text"), receiver.at
        )

    def _accessor(self, receiver: Value, method: str, args: list[Node], at: int) -> Value:
        if args:
            raise FilterError(
                f"{method}() takes no timezone argument: accessors are UTC", start(args[0])
            )
        if not isinstance(receiver, VTs):
            raise FilterError(f"{method}() needs a timestamp, got {type_name(receiver)}", at)
        if receiver.field is None and not receiver.now:
            return VInt(IntConst(_accessor_of(receiver.offset, method)), receiver.at)
        if receiver.now or receiver.offset:
            raise FilterError(f"{method}() is only supported on a timestamp field", at)
        return VInt(IntField(receiver.field or "", cast(Accessor, method)), receiver.at)

    def _comprehension(self, receiver: Value, method: str, args: list[Node], at: int) -> Value:
        if not isinstance(receiver, VTags):
            raise FilterError(f"{method}() is only supported on tags", at)
        if len(args) != 2:
            raise FilterError(f"{method}() takes a variable and a predicate", at)
        var_node = args[0]
        while (
            isinstance(var_node, lark.Tree)
            and len(var_node.children) == 1
            and var_node.data != "ident"
        ):
            var_node = var_node.children[0]
        if not (isinstance(var_node, lark.Tree) and var_node.data == "ident"):
            raise FilterError("the first argument must be a variable name", start(args[0]))
        if self.comprehension_var is not None:
            raise FilterError("nested comprehensions are not supported", at)
        self.comprehension_var = str(var_node.children[0])
        try:
            body = self.expr(args[1])
        finally:
            self.comprehension_var = None
        if not isinstance(body, VTagPred):
            raise FilterError(
                'unsupported comprehension predicate: use t == "s", t.startsWith("s"), '
                't.endsWith("s") or t.contains("s")',
                start(args[1]),
            )
        quantifier = cast(Literal["exists", "all", "exists_one"], method)
        return VBool(TagQuant(quantifier, body.op, body.value), receiver.at)

    def _sets(self, method: str, args: list[Node], at: int) -> Value:
        if method not in ("contains", "intersects", "equivalent"):
            raise FilterError(f"unknown function 'sets.{method}'", at)
        if len(args) != 2:
            raise FilterError(f"sets.{method}() takes two lists", at)
        first, second = self.expr(args[0]), self.expr(args[1])
        if not isinstance(first, VTags):
            raise FilterError(
                f"sets.{method}() is only supported with tags as the first list", start(args[0])
            )
        if not isinstance(second, VList) or not all(isinstance(i, str) for i in second.items):
            raise FilterError(
                "the second argument must be a list of string literals", start(args[1])
            )
        tags = cast(tuple[str, ...], tuple(dict.fromkeys(second.items)))
        if method == "contains":
            pred = conj([TagHas(t) for t in tags])
        elif method == "intersects":
            pred = TagAny(tags) if tags else BoolConst(False)
        else:
            pred = conj([*(TagHas(t) for t in tags), TagOnly(tags)])
        return VBool(pred, first.at)
