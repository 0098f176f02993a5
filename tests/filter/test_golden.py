"""Golden SQL per dialect for each operator family.

These pin the shapes that decide index use (trigram prefilter, tag
subqueries, sargable timestamp bounds) and show that every value is a bound
parameter. On PostgreSQL the needle values (content and tag patterns, tags)
are bound with ``literal_execute`` (``__[POSTCOMPILE_...]``): the dialect
quotes them into the statement text when it is sent, so that a prepared
statement's generic plan is costed with them (decision 0045). Regenerate
deliberately, never to make a diff go away.

``GOLDEN`` is the default (sparse) rendering; ``DENSE_GOLDEN`` the per-row
rendering of the needles a selectivity probe found common
(``app.filter.selectivity``), and the probe statements themselves.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from app.db.schema import attachment, memo
from app.filter import compile_attachment_filter, compile_memo_filter, memo_filter_needles
from app.filter.selectivity import Probe, Span, TagNeedle, TrigramNeedle, candidates

CASES = [
    ("contains", "memo", 'content.contains("50%_off")'),
    ("contains-short", "memo", 'content.contains("ab")'),
    ("startsWith", "memo", 'content.startsWith("Привет")'),
    ("endsWith", "memo", 'content.endsWith("x")'),
    ("content-eq", "memo", 'content == "Hello"'),
    ("content-lt", "memo", 'content < "m"'),
    ("content-in", "memo", 'content in ["a", "b"]'),
    ("matches", "memo", 'content.matches("^a.c$")'),
    ("size-content", "memo", "size(content) > 10"),
    ("creator", "memo", 'creator == "users/alice"'),
    ("creator-ne", "memo", 'creator != "users/alice"'),
    ("creator_id-in", "memo", "creator_id in [1, 2]"),
    ("folding", "memo", "creator_id == 100 / 10"),
    ("ts-now", "memo", 'created_ts > now - duration("24h")'),
    ("ts-compat", "memo", "created_ts > now() - 86400"),
    ("ts-rfc", "memo", 'updated_ts <= timestamp("2024-01-01T00:00:00+02:00")'),
    ("ts-fraction", "memo", 'created_ts >= timestamp("2024-01-01T00:00:00.5Z")'),
    ("ts-fields", "memo", "created_ts < updated_ts"),
    ("accessor-year", "memo", "created_ts.getFullYear() == 2024"),
    ("accessor-month", "memo", "created_ts.getMonth() == 0"),
    ("accessor-dow", "memo", "updated_ts.getDayOfWeek() == 0"),
    ("flag", "memo", "pinned"),
    ("flag-not", "memo", "!has_link"),
    ("flag-eq-false", "memo", "has_code == false"),
    ("has_location", "memo", "has_location"),
    ("visibility-in", "memo", 'visibility in ["PUBLIC", "PROTECTED"]'),
    ("tag-in-tags", "memo", '"work" in tags'),
    ("tag-in-list", "memo", 'tag in ["book", "work"]'),
    ("tag-in-empty", "memo", "tag in []"),
    ("size-tags", "memo", "size(tags) == 2"),
    ("exists", "memo", 'tags.exists(t, t.startsWith("wo"))'),
    ("all", "memo", 'tags.all(t, t.endsWith("x*"))'),
    ("exists_one", "memo", 'tags.exists_one(t, t.contains("_"))'),
    ("sets-contains", "memo", 'sets.contains(tags, ["a", "b"])'),
    ("sets-intersects", "memo", 'sets.intersects(tags, ["a", "b"])'),
    ("sets-equivalent", "memo", 'sets.equivalent(tags, ["a"])'),
    ("space-null", "memo", "space == null"),
    ("tree-eq", "memo", 'tree == "a.b"'),
    ("tree-subtree", "memo", 'tree.startsWith("a.b_c")'),
    ("bool-ops", "memo", '!(pinned || visibility == "PUBLIC") && has_code'),
    ("true", "memo", "true && 1 == 1"),
    ("false", "memo", 'pinned && "a" == "b"'),
    ("attachment-filename", "attachment", 'filename.contains("Report")'),
    ("attachment-mime", "attachment", 'mime_type.startsWith("image/")'),
    ("attachment-memo", "attachment", 'memo_id == "memos/abc"'),
    ("attachment-unlinked", "attachment", "memo_id == null"),
    ("attachment-time", "attachment", 'create_time > now - duration("1h")'),
]

DIALECTS = {"sqlite": sqlite.dialect(), "postgresql": postgresql.dialect()}


def render(name: str, dialect_name: str, *, dense: bool = False) -> str:
    target, text = next((t, x) for n, t, x in CASES if n == name)
    table = memo if target == "memo" else attachment
    if target == "memo":
        needles = frozenset(memo_filter_needles(text)) if dense else frozenset()
        where = compile_memo_filter(
            text, now=1_700_000_000, dialect_name=dialect_name, dense=needles
        )
    else:
        where = compile_attachment_filter(text, now=1_700_000_000, dialect_name=dialect_name)
    compiled = sa.select(table.c.id).where(where).compile(dialect=DIALECTS[dialect_name])
    return " ".join(str(compiled).split())


GOLDEN: dict[tuple[str, str], str] = {
    (
        "contains",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE memo.id IN (SELECT memo_trgm.rowid FROM memo_trgm WHERE memo_trgm.content MATCH ?) AND daybook_fold(memo.content) LIKE ? ESCAPE '\\'",
    (
        "contains",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE lower(memo.content) LIKE lower(__[POSTCOMPILE_param_1]) ESCAPE '\\'",
    (
        "contains-short",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE daybook_fold(memo.content) LIKE ? ESCAPE '\\'",
    (
        "contains-short",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE lower(memo.content) LIKE lower(__[POSTCOMPILE_param_1]) ESCAPE '\\'",
    (
        "startsWith",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE memo.id IN (SELECT memo_trgm.rowid FROM memo_trgm WHERE memo_trgm.content MATCH ?) AND daybook_fold(memo.content) LIKE ? ESCAPE '\\'",
    (
        "startsWith",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE lower(memo.content) LIKE lower(__[POSTCOMPILE_param_1]) ESCAPE '\\'",
    (
        "endsWith",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE daybook_fold(memo.content) LIKE ? ESCAPE '\\'",
    (
        "endsWith",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE lower(memo.content) LIKE lower(__[POSTCOMPILE_param_1]) ESCAPE '\\'",
    ("content-eq", "sqlite"): "SELECT memo.id FROM memo WHERE daybook_fold(memo.content) = ?",
    (
        "content-eq",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE lower(memo.content) = lower(%(param_1)s::VARCHAR)",
    ("content-lt", "sqlite"): "SELECT memo.id FROM memo WHERE daybook_fold(memo.content) < ?",
    (
        "content-lt",
        "postgresql",
    ): 'SELECT memo.id FROM memo WHERE (lower(memo.content) COLLATE "C") < lower(%(param_1)s::VARCHAR)',
    ("content-in", "sqlite"): "SELECT memo.id FROM memo WHERE daybook_fold(memo.content) IN (?, ?)",
    (
        "content-in",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE lower(memo.content) IN (lower(%(param_1)s::VARCHAR), lower(%(param_2)s::VARCHAR))",
    ("matches", "sqlite"): "SELECT memo.id FROM memo WHERE memo.content REGEXP ?",
    (
        "matches",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.content ~ %(content_1)s::VARCHAR",
    ("size-content", "sqlite"): "SELECT memo.id FROM memo WHERE length(memo.content) > ?",
    (
        "size-content",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE char_length(memo.content) > %(param_1)s::BIGINT",
    (
        "creator",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE memo.creator_id IN (SELECT user_account.id FROM user_account WHERE user_account.username = ?)",
    (
        "creator",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.creator_id IN (SELECT user_account.id FROM user_account WHERE user_account.username = %(username_1)s::VARCHAR)",
    (
        "creator-ne",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE (memo.creator_id NOT IN (SELECT user_account.id FROM user_account WHERE user_account.username = ?))",
    (
        "creator-ne",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE (memo.creator_id NOT IN (SELECT user_account.id FROM user_account WHERE user_account.username = %(username_1)s::VARCHAR))",
    (
        "creator_id-in",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE memo.creator_id IN (__[POSTCOMPILE_creator_id_1])",
    (
        "creator_id-in",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.creator_id IN (__[POSTCOMPILE_creator_id_1])",
    ("folding", "sqlite"): "SELECT memo.id FROM memo WHERE memo.creator_id = ?",
    (
        "folding",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.creator_id = %(param_1)s::BIGINT",
    ("ts-now", "sqlite"): "SELECT memo.id FROM memo WHERE memo.created_ts > ?",
    (
        "ts-now",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.created_ts > %(param_1)s::BIGINT",
    ("ts-compat", "sqlite"): "SELECT memo.id FROM memo WHERE memo.created_ts > ?",
    (
        "ts-compat",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.created_ts > %(param_1)s::BIGINT",
    ("ts-rfc", "sqlite"): "SELECT memo.id FROM memo WHERE memo.updated_ts <= ?",
    (
        "ts-rfc",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.updated_ts <= %(param_1)s::BIGINT",
    ("ts-fraction", "sqlite"): "SELECT memo.id FROM memo WHERE memo.created_ts >= ?",
    (
        "ts-fraction",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.created_ts >= %(param_1)s::BIGINT",
    ("ts-fields", "sqlite"): "SELECT memo.id FROM memo WHERE memo.created_ts < memo.updated_ts",
    ("ts-fields", "postgresql"): "SELECT memo.id FROM memo WHERE memo.created_ts < memo.updated_ts",
    (
        "accessor-year",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE CAST(strftime(?, memo.created_ts, ?) AS INTEGER) = ?",
    (
        "accessor-year",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE CAST(EXTRACT(year FROM timezone(%(timezone_1)s::VARCHAR, to_timestamp(memo.created_ts))) AS INTEGER) = %(param_1)s::BIGINT",
    (
        "accessor-month",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE CAST(strftime(?, memo.created_ts, ?) AS INTEGER) + ? = ?",
    (
        "accessor-month",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE CAST(EXTRACT(month FROM timezone(%(timezone_1)s::VARCHAR, to_timestamp(memo.created_ts))) AS INTEGER) + %(param_1)s::INTEGER = %(param_2)s::BIGINT",
    (
        "accessor-dow",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE CAST(strftime(?, memo.updated_ts, ?) AS INTEGER) = ?",
    (
        "accessor-dow",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE CAST(EXTRACT(dow FROM timezone(%(timezone_1)s::VARCHAR, to_timestamp(memo.updated_ts))) AS INTEGER) = %(param_1)s::BIGINT",
    ("flag", "sqlite"): "SELECT memo.id FROM memo WHERE memo.pinned = 1",
    ("flag", "postgresql"): "SELECT memo.id FROM memo WHERE memo.pinned",
    ("flag-not", "sqlite"): "SELECT memo.id FROM memo WHERE memo.has_link = 0",
    ("flag-not", "postgresql"): "SELECT memo.id FROM memo WHERE NOT memo.has_link",
    ("flag-eq-false", "sqlite"): "SELECT memo.id FROM memo WHERE memo.has_code = 0",
    ("flag-eq-false", "postgresql"): "SELECT memo.id FROM memo WHERE NOT memo.has_code",
    (
        "has_location",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE memo.location_placeholder IS NOT NULL",
    (
        "has_location",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.location_placeholder IS NOT NULL",
    (
        "visibility-in",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE memo.visibility IN (__[POSTCOMPILE_visibility_1])",
    (
        "visibility-in",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.visibility IN (__[POSTCOMPILE_visibility_1])",
    (
        "tag-in-tags",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE memo.id IN (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.tag = ?)",
    (
        "tag-in-tags",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.id IN (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.tag = __[POSTCOMPILE_param_1])",
    (
        "tag-in-list",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE memo.id IN (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.tag IN (__[POSTCOMPILE_tag_1]))",
    (
        "tag-in-list",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.id IN (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.tag IN (__[POSTCOMPILE_tag_1]))",
    ("tag-in-empty", "sqlite"): "SELECT memo.id FROM memo WHERE 0 = 1",
    ("tag-in-empty", "postgresql"): "SELECT memo.id FROM memo WHERE false",
    (
        "size-tags",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE (SELECT count(*) AS count_1 FROM memo_tag WHERE memo_tag.memo_id = memo.id) = ?",
    (
        "size-tags",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE (SELECT count(*) AS count_1 FROM memo_tag WHERE memo_tag.memo_id = memo.id) = %(param_1)s::BIGINT",
    (
        "exists",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE memo.id IN (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.tag GLOB ?)",
    (
        "exists",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.id IN (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.tag LIKE __[POSTCOMPILE_param_1] ESCAPE '\\')",
    (
        "all",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE (EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id)) AND NOT (EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND NOT (memo_tag.tag GLOB ?)))",
    (
        "all",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE (EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id)) AND NOT (EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND memo_tag.tag NOT LIKE __[POSTCOMPILE_param_1] ESCAPE '\\'))",
    (
        "exists_one",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE (SELECT count(*) AS count_1 FROM memo_tag WHERE memo_tag.memo_id = memo.id AND (memo_tag.tag GLOB ?)) = ?",
    (
        "exists_one",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE (SELECT count(*) AS count_1 FROM memo_tag WHERE memo_tag.memo_id = memo.id AND memo_tag.tag LIKE __[POSTCOMPILE_param_1] ESCAPE '\\') = %(param_2)s::INTEGER",
    (
        "sets-contains",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE memo.id IN (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.tag = ?) AND memo.id IN (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.tag = ?)",
    (
        "sets-contains",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.id IN (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.tag = __[POSTCOMPILE_param_1]) AND memo.id IN (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.tag = __[POSTCOMPILE_param_2])",
    (
        "sets-intersects",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE memo.id IN (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.tag IN (__[POSTCOMPILE_tag_1]))",
    (
        "sets-intersects",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.id IN (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.tag IN (__[POSTCOMPILE_tag_1]))",
    (
        "sets-equivalent",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE memo.id IN (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.tag = ?) AND NOT (EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND (memo_tag.tag NOT IN (__[POSTCOMPILE_tag_2]))))",
    (
        "sets-equivalent",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.id IN (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.tag = __[POSTCOMPILE_param_1]) AND NOT (EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND (memo_tag.tag NOT IN (__[POSTCOMPILE_tag_1]))))",
    ("space-null", "sqlite"): "SELECT memo.id FROM memo WHERE memo.space_id IS NULL",
    ("space-null", "postgresql"): "SELECT memo.id FROM memo WHERE memo.space_id IS NULL",
    ("tree-eq", "sqlite"): "SELECT memo.id FROM memo WHERE memo.tree IS NOT NULL AND memo.tree = ?",
    (
        "tree-eq",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.tree IS NOT NULL AND memo.tree = %(tree_1)s::VARCHAR",
    (
        "tree-subtree",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE memo.tree IS NOT NULL AND (memo.tree = ? OR (memo.tree GLOB ?))",
    (
        "tree-subtree",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE memo.tree IS NOT NULL AND (memo.tree = %(tree_1)s::VARCHAR OR memo.tree LIKE __[POSTCOMPILE_param_1] ESCAPE '\\')",
    (
        "bool-ops",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE NOT (memo.pinned = 1 OR memo.visibility = ?) AND memo.has_code = 1",
    (
        "bool-ops",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE NOT (memo.pinned OR memo.visibility = %(param_1)s::VARCHAR) AND memo.has_code",
    ("true", "sqlite"): "SELECT memo.id FROM memo WHERE 1 = 1",
    ("true", "postgresql"): "SELECT memo.id FROM memo WHERE true",
    ("false", "sqlite"): "SELECT memo.id FROM memo WHERE 0 = 1",
    ("false", "postgresql"): "SELECT memo.id FROM memo WHERE false",
    (
        "attachment-filename",
        "sqlite",
    ): "SELECT attachment.id FROM attachment WHERE daybook_fold(attachment.filename) LIKE ? ESCAPE '\\'",
    (
        "attachment-filename",
        "postgresql",
    ): "SELECT attachment.id FROM attachment WHERE lower(attachment.filename) LIKE lower(__[POSTCOMPILE_param_1]) ESCAPE '\\'",
    (
        "attachment-mime",
        "sqlite",
    ): "SELECT attachment.id FROM attachment WHERE attachment.mime_type GLOB ?",
    (
        "attachment-mime",
        "postgresql",
    ): "SELECT attachment.id FROM attachment WHERE attachment.mime_type LIKE __[POSTCOMPILE_param_1] ESCAPE '\\'",
    (
        "attachment-memo",
        "sqlite",
    ): "SELECT attachment.id FROM attachment WHERE attachment.memo_id IS NOT NULL AND attachment.memo_id IN (SELECT memo.id FROM memo WHERE memo.uid = ?)",
    (
        "attachment-memo",
        "postgresql",
    ): "SELECT attachment.id FROM attachment WHERE attachment.memo_id IS NOT NULL AND attachment.memo_id IN (SELECT memo.id FROM memo WHERE memo.uid = %(uid_1)s::VARCHAR)",
    (
        "attachment-unlinked",
        "sqlite",
    ): "SELECT attachment.id FROM attachment WHERE attachment.memo_id IS NULL",
    (
        "attachment-unlinked",
        "postgresql",
    ): "SELECT attachment.id FROM attachment WHERE attachment.memo_id IS NULL",
    (
        "attachment-time",
        "sqlite",
    ): "SELECT attachment.id FROM attachment WHERE attachment.created_ts > ?",
    (
        "attachment-time",
        "postgresql",
    ): "SELECT attachment.id FROM attachment WHERE attachment.created_ts > %(param_1)s::BIGINT",
}


@pytest.mark.parametrize("dialect_name", sorted(DIALECTS))
@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_golden_sql(name: str, dialect_name: str) -> None:
    assert render(name, dialect_name) == GOLDEN[(name, dialect_name)]


# Only the needles' own SQL changes; every other case renders as in GOLDEN.
DENSE_GOLDEN: dict[tuple[str, str], str] = {
    (
        "contains",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE daybook_fold(memo.content) LIKE ? ESCAPE '\\'",
    (
        "startsWith",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE daybook_fold(memo.content) LIKE ? ESCAPE '\\'",
    (
        "tag-in-tags",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND memo_tag.tag = __[POSTCOMPILE_param_1])",
    (
        "tag-in-tags",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND memo_tag.tag = ?)",
    (
        "tag-in-list",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND memo_tag.tag IN (__[POSTCOMPILE_tag_1]))",
    (
        "tag-in-list",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND memo_tag.tag IN (__[POSTCOMPILE_tag_1]))",
    (
        "exists",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND memo_tag.tag LIKE __[POSTCOMPILE_param_1] ESCAPE '\\')",
    (
        "exists",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND (memo_tag.tag GLOB ?))",
    (
        "sets-contains",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE (EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND memo_tag.tag = __[POSTCOMPILE_param_1])) AND (EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND memo_tag.tag = __[POSTCOMPILE_param_2]))",
    (
        "sets-contains",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE (EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND memo_tag.tag = ?)) AND (EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND memo_tag.tag = ?))",
    (
        "sets-intersects",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND memo_tag.tag IN (__[POSTCOMPILE_tag_1]))",
    (
        "sets-intersects",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND memo_tag.tag IN (__[POSTCOMPILE_tag_1]))",
    (
        "sets-equivalent",
        "postgresql",
    ): "SELECT memo.id FROM memo WHERE (EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND memo_tag.tag = __[POSTCOMPILE_param_1])) AND NOT (EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND (memo_tag.tag NOT IN (__[POSTCOMPILE_tag_1]))))",
    (
        "sets-equivalent",
        "sqlite",
    ): "SELECT memo.id FROM memo WHERE (EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND memo_tag.tag = ?)) AND NOT (EXISTS (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.memo_id = memo.id AND (memo_tag.tag NOT IN (__[POSTCOMPILE_tag_2]))))",
}


@pytest.mark.parametrize("dialect_name", sorted(DIALECTS))
@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_golden_dense_sql(name: str, dialect_name: str) -> None:
    # PostgreSQL's content matches have one rendering (no IN-list); its tags have two.
    expected = DENSE_GOLDEN.get((name, dialect_name), GOLDEN[(name, dialect_name)])
    assert render(name, dialect_name, dense=True) == expected


def test_needles() -> None:
    """What a probe rates: folded 3+ character content needles and index-range tag conditions."""
    text = (
        'content.contains("Coffee") && !content.startsWith("COFFEE") && content.endsWith("ab")'
        ' && "work" in tags && tag in ["a", "b"] && tags.exists(t, t.startsWith("wo"))'
        ' && tags.exists(t, t.contains("x")) && tags.all(t, t == "x") && size(tags) > 0'
    )
    assert memo_filter_needles(text) == (
        TrigramNeedle("coffee"),
        TagNeedle("==", ("work",)),
        TagNeedle("in", ("a", "b")),
        TagNeedle("startsWith", ("wo",)),
    )
    assert memo_filter_needles('tags.exists(t, t == "x") || sets.intersects(tags, ["p"])') == (
        TagNeedle("==", ("x",)),
        TagNeedle("in", ("p",)),
    )
    assert memo_filter_needles("pinned && tag in []") == ()


def test_probe_counts_what_the_sparse_rendering_reads() -> None:
    """The sparse rendering's IN-list is the needle's candidates, which the probe samples."""
    dialect = DIALECTS["sqlite"]
    for text in (
        'content.contains("50%_Off")',
        '"work" in tags',
        'tag in ["book", "work"]',
        'tags.exists(t, t.startsWith("wo*"))',
    ):
        (needle,) = memo_filter_needles(text)
        subquery = " ".join(str(candidates(needle).compile(dialect=dialect)).split())
        sparse = render_text(text)
        assert f"IN ({subquery})" in sparse, (subquery, sparse)
    text = (
        '"work" in tags && content.contains("Tea") && tags.exists(t, t.startsWith("a*"))'
        ' && tag in ["x", "y"]'
    )
    probe = Probe(memo_filter_needles(text), Span(1, 1000), 255)
    compiled = probe.statement().compile(dialect=dialect)
    assert " ".join(str(compiled).split()) == (
        "SELECT ? AS anon_1, count(DISTINCT memo_tag.memo_id) AS count_1,"
        " min(memo_tag.memo_id) AS min_1 FROM memo_tag"
        " WHERE memo_tag.tag = ? AND memo_tag.memo_id >= ?"
        " UNION ALL SELECT ? AS anon_2, count(*) AS count_2, max(anon_3.rowid) AS max_1"
        " FROM (SELECT memo_trgm.rowid AS rowid FROM memo_trgm"
        " WHERE memo_trgm.content MATCH ? AND memo_trgm.rowid <= ? LIMIT ? OFFSET ?) AS anon_3"
        " UNION ALL SELECT ? AS anon_4, count(DISTINCT memo_tag.memo_id) AS count_3,"
        " min(memo_tag.memo_id) AS min_2 FROM memo_tag"
        " WHERE (memo_tag.tag || ? GLOB ?) AND memo_tag.memo_id >= ?"
        " UNION ALL SELECT ? AS anon_5, count(DISTINCT memo_tag.memo_id) AS count_4,"
        " min(memo_tag.memo_id) AS min_3 FROM memo_tag"
        " WHERE memo_tag.tag IN (__[POSTCOMPILE_v3]) AND memo_tag.memo_id >= ?"
        " UNION ALL SELECT ? AS anon_6, anon_8.anon_7, anon_8.anon_9"
        " FROM (SELECT (SELECT min(memo.id) AS min_4 FROM memo) AS anon_7,"
        " (SELECT max(memo.id) AS max_2 FROM memo) AS anon_9) AS anon_8"
    )
    # The statement is shared by every filter with the same needle kinds; the values come
    # apart. Window: ceil(32 * 1000 / 255) = 126 ids, the oldest for content, the newest
    # for tags.
    assert (
        probe.statement()
        is Probe(
            memo_filter_needles(
                '"a" in tags && content.contains("zzz") && tags.exists(t, '
                't.startsWith("b")) && tag in ["c"]'
            ),
            Span(1, 50),
            9,
        ).statement()
    )
    assert probe.params() == {
        "hi": 126,
        "lo": 875,
        "v0": "work",
        "v1": '"tea"',
        "v2": "a[*]*",
        "v3": ["x", "y"],
    }


def render_text(text: str) -> str:
    where = compile_memo_filter(text, now=0, dialect_name="sqlite")
    return " ".join(
        str(sa.select(memo.c.id).where(where).compile(dialect=DIALECTS["sqlite"])).split()
    )


def _params(text: str, dialect_name: str) -> dict[str, object]:
    where = compile_memo_filter(text, now=1_700_000_000, dialect_name=dialect_name)
    compiled = sa.select(memo.c.id).where(where).compile(dialect=DIALECTS[dialect_name])
    return dict(compiled.params)


def test_bound_values() -> None:
    """The values behind the golden shapes: escaping, folding, and time arithmetic."""
    assert set(_params('content.contains("50%_Off")', "sqlite").values()) == {
        '"50%_off"',
        "%50\\%\\_off%",
    }
    assert set(_params('content.contains("50%_Off")', "postgresql").values()) == {"%50\\%\\_Off%"}
    assert set(_params('content.contains("a\\"b")', "sqlite").values()) == {'"a""b"', '%a"b%'}
    assert list(_params('created_ts > now - duration("24h")', "sqlite").values()) == [
        1_700_000_000 - 86_400
    ]
    # x*N >= 1704067200.5 s  <=>  x >= 1704067201
    assert list(
        _params('created_ts >= timestamp("2024-01-01T00:00:00.5Z")', "sqlite").values()
    ) == [1_704_067_201]
    assert list(_params('created_ts < now - duration("1.5s")', "sqlite").values()) == [
        1_700_000_000 - 1
    ]
    assert set(_params('tags.exists(t, t.startsWith("a*[?"))', "sqlite").values()) == {
        "a[*][[][?]*"
    }
    assert set(_params('tree.startsWith("a_b")', "postgresql").values()) == {"a_b", "a\\_b.%"}


def test_postgresql_needles_are_quoted_into_the_statement() -> None:
    """Decision 0045: the text PostgreSQL receives, quotes and LIKE escapes included."""
    text = r"""content.contains("it's 50%_\\") && "a'b" in tags && tag in ["x'", "y"]"""
    where = compile_memo_filter(text, now=0, dialect_name="postgresql")
    dialect = postgresql.asyncpg.dialect()  # type: ignore[attr-defined]
    sql = (
        sa.select(memo.c.id)
        .where(where)
        .compile(dialect=dialect, compile_kwargs={"render_postcompile": True})
    )
    assert " ".join(str(sql).split()) == (
        r"SELECT memo.id FROM memo WHERE lower(memo.content) LIKE"
        r" lower('%it''s 50\%\_\\%') ESCAPE '\'"
        r" AND memo.id IN (SELECT memo_tag.memo_id FROM memo_tag WHERE memo_tag.tag = 'a''b')"
        r" AND memo.id IN (SELECT memo_tag.memo_id FROM memo_tag"
        r" WHERE memo_tag.tag IN ('x''', 'y'))"
    )


def test_now_is_not_cached() -> None:
    text = "created_ts > now"
    assert list(_params(text, "sqlite").values()) == [1_700_000_000]
    where = compile_memo_filter(text, now=5, dialect_name="sqlite")
    compiled = sa.select(memo.c.id).where(where).compile(dialect=DIALECTS["sqlite"])
    assert list(compiled.params.values()) == [5]


def test_equal_timestamp_with_fraction_is_false() -> None:
    where = compile_memo_filter(
        'created_ts == timestamp("2024-01-01T00:00:00.5Z")', now=0, dialect_name="sqlite"
    )
    assert " ".join(str(sa.select(memo.c.id).where(where)).split()).endswith("WHERE false")
