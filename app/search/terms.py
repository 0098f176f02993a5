"""User query text to search terms, without ever producing query syntax.

Words are runs of Unicode word characters, so FTS operators (``"``, ``*``,
``NEAR(``, ``-``, ``:``, parentheses) are separators and never reach a
``MATCH`` expression unquoted. CJK runs have no spaces between words, so they
become overlapping character bigrams, which is how CJK search engines index
them when no dictionary segmenter is available.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

MAX_QUERY_CHARS = 1000
MAX_TERMS = 32

# Function words of the languages Daybook's users write most, dropped from the
# lexical arm unless the query has nothing else: "when do I see the dentist"
# should rank by "dentist", not by every note that contains "the".
STOPWORDS = frozenset(
    """
    a an and are as at be been but by can could did do does for from had has have how i if
    in into is it its me my no not of on or our so than that the their them then there these
    they this to too was we were what when where which who why will with would you your
    aber als am an auf aus bei das dem den der des die ein eine einen er es für ich im in ist
    mit nicht oder sie und von war wie zu zum zur
    au aux avec ce ces dans de des du elle en est et il je la le les leur mon ne nous on ou
    par pas pour qui sur un une vous
    al con del el en es la las lo los mi para por que se su un una y
    """.split()  # noqa: SIM905 (a word list reads better as text)
)

_WORD = re.compile(r"\w+", re.UNICODE)
_CJK = re.compile(
    "([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\u31f0-\u31ff]+)"
)


@dataclass(frozen=True, slots=True)
class Terms:
    words: tuple[str, ...]  # lower-cased, non-CJK
    cjk: tuple[str, ...]  # CJK bigrams (or single characters)

    @property
    def empty(self) -> bool:
        return not self.words and not self.cjk


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


def parse_terms(text: str) -> Terms:
    words: dict[str, None] = {}
    cjk: dict[str, None] = {}
    for token in _WORD.findall(text):
        for i, part in enumerate(_CJK.split(token)):
            if not part:
                continue
            if i % 2:
                cjk.update(dict.fromkeys(_bigrams(part)))
            else:
                words.update(dict.fromkeys(w for w in part.lower().split("_") if w))
    content = [w for w in words if w not in STOPWORDS]
    kept = content if content or cjk else list(words)
    return Terms(tuple(kept)[:MAX_TERMS], tuple(cjk)[:MAX_TERMS])


MAJORITY_MAX_WORDS = 7  # C(7, 4) = 35 conjunctions at most


def min_match_tiers(words: int, any_word: bool = False) -> list[int]:
    """How many of the query's ``words`` a memo must contain, strictest first.

    All of them; then, for three to ``MAJORITY_MAX_WORDS`` words, a majority
    (more than half, the usual "minimum should match"); then one word only when
    ``any_word`` (``mode=lexical``, so a keyword search is not left empty while
    a word matches). In hybrid a memo sharing a single word with a multi-word
    query does not enter the lexical arm: the semantic arm is what ranks
    partial, fuzzy matches. Each tier is used only when the stricter ones found
    nothing, so ``mode=lexical`` equals hybrid's lexical arm whenever that arm
    is not empty.
    """
    if words <= 1:
        return [words] if words else []
    tiers = [words]
    majority = words // 2 + 1
    if majority < words and words <= MAJORITY_MAX_WORDS:
        tiers.append(majority)
    if any_word:
        tiers.append(1)
    return tiers


def _groups(words: tuple[str, ...], at_least: int) -> list[tuple[str, ...]]:
    """Conjunctions whose disjunction means "contains ``at_least`` of ``words``"."""
    if at_least >= len(words):
        return [words]
    if at_least <= 1:
        return [(w,) for w in words]
    return list(itertools.combinations(words, at_least))


def fts5_match(words: tuple[str, ...], at_least: int = 1) -> str:
    """An FTS5 MATCH expression: memos containing ``at_least`` of the quoted words."""
    quoted = ['"' + w.replace('"', '""') + '"' for w in words]
    groups = _groups(tuple(quoted), at_least)
    if len(groups) == 1:
        return " AND ".join(groups[0])
    return " OR ".join("(" + " AND ".join(g) + ")" if len(g) > 1 else g[0] for g in groups)


def tsquery_groups(words: tuple[str, ...], at_least: int = 1) -> list[tuple[str, ...]]:
    """The same for PostgreSQL: OR of AND groups, each word bound as ``plainto_tsquery``."""
    return _groups(words, at_least)
