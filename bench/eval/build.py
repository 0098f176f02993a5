"""Generate the retrieval set from ``topics.py``: ``python -m bench.eval.build``.

Two queries per topic: the hand-written paraphrase from ``topics.py``
(``<topic>``), and a known-item query (``<topic>#known``): the words of the
topic's first detail, relevant where a note contains them. Four notes per
topic, each naming the subject in one of its wordings and
carrying one or two of its details, in a few note-like frames; plus filler
notes from the benchmark corpus generator (``bench.corpus``), which share its
everyday vocabulary but no topic. Deterministic (seeded); the output files
are committed so the labels can be reviewed in a diff.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from bench.corpus import content_pool
from bench.eval.topics import TOPICS

HERE = Path(__file__).parent
NOTES_PER_TOPIC = 4
FILLERS = 800
SEED = 6

FRAMES = (
    "{s}: {d1}.",
    "{s} — {d1}, {d2}.",
    "{d1} ({s})",
    "{s}. {d1}. {d2}.",
    "- [ ] {s}\n- [ ] {d1}",
    "#todo {s}, {d2}",
)


def notes_for(rng: random.Random, subjects: list[str], details: list[str]) -> list[str]:
    out = []
    for k in range(NOTES_PER_TOPIC):
        s = subjects[k % len(subjects)]
        d1, d2 = rng.sample(details, 2)
        frame = FRAMES[(k + rng.randrange(len(FRAMES))) % len(FRAMES)]
        text = frame.format(s=s, d1=d1, d2=d2)
        out.append(text[0].upper() + text[1:])
    return out


def build() -> tuple[list[dict[str, object]], list[tuple[str, str]], list[tuple[str, str, int]]]:
    rng = random.Random(SEED)
    docs: list[dict[str, object]] = []
    queries: list[tuple[str, str]] = []
    qrels: list[tuple[str, str, int]] = []
    for topic, query, subjects, details in TOPICS:
        queries.append((topic, query))
        for i, text in enumerate(notes_for(rng, subjects, details), 1):
            doc_id = f"{topic}-{i}"
            docs.append({"id": doc_id, "text": text})
            qrels.append((topic, doc_id, 1))
    # Known-item queries: the words of one detail, as a person looks up a note
    # they remember writing; relevant are the topic's notes that contain it.
    for topic, _query, _subjects, details in TOPICS:
        written = [d for d in docs if str(d["id"]).startswith(f"{topic}-")]
        for detail in details[:1]:
            hits = [str(d["id"]) for d in written if detail in str(d["text"])]
            if hits:
                queries.append((f"{topic}#known", detail))
                qrels.extend((f"{topic}#known", h, 1) for h in hits)
    for i, c in enumerate(content_pool(FILLERS, random.Random(SEED + 1))):
        docs.append({"id": f"filler-{i:04d}", "text": c.text})
    rng.shuffle(docs)
    start = 1_700_000_000
    for doc in docs:
        doc["ts"] = start + rng.randrange(365 * 86_400)
    return docs, queries, qrels


def main() -> None:
    docs, queries, qrels = build()
    with (HERE / "corpus.jsonl").open("w") as fh:
        for d in docs:
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")
    (HERE / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in queries))
    (HERE / "qrels.tsv").write_text("".join(f"{q}\t{d}\t{r}\n" for q, d, r in qrels))
    print(f"{len(docs)} documents, {len(queries)} queries, {len(qrels)} judgements")


if __name__ == "__main__":
    main()
