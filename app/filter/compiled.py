"""The filter's one compile step: text in, a ``CompiledFilter`` out.

A list lowers its filter once (``compile_filter``, cached by text and
target) and keeps the result: the same object names the needles a
selectivity probe may rate (``needles``) and renders the predicate for a
dialect and a request clock (``render``). Nothing downstream sees the text
again, so nothing lowers it twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from sqlalchemy.sql.elements import ColumnElement

from app.filter.errors import FilterError
from app.filter.ir import Pred
from app.filter.lower import Lowerer, Target
from app.filter.parse import parse
from app.filter.render import Renderer
from app.filter.selectivity import Needle, needles

__all__ = ["CompiledFilter", "compile_filter", "lower_filter"]


@lru_cache(maxsize=1024)
def _lowered(text: str, target: Target) -> Pred | tuple[str, int]:
    # Errors are cached too (as plain data, not exception objects), so a client
    # retrying a hostile filter costs a dict lookup.
    try:
        return Lowerer(text, target).lower(parse(text))
    except FilterError as exc:
        return (exc.message, exc.offset)
    except RecursionError:
        return ("filter too complex", 0)
    except Exception as exc:  # the contract: no input may cause anything but a 400
        return (f"invalid filter ({type(exc).__name__})", 0)


def lower_filter(text: str, target: Target = "memo") -> Pred:
    """The cached IR for ``text``, or ``FilterError``."""
    if not isinstance(text, str):
        raise FilterError("filter must be a string", 0)
    result = _lowered(text, target)
    if isinstance(result, tuple):
        raise FilterError(*result)
    return result


@dataclass(frozen=True, slots=True)
class CompiledFilter:
    """A filter lowered for its target; pure, hashable, and free of the request clock."""

    target: Target
    pred: Pred

    @property
    def needles(self) -> tuple[Needle, ...]:
        """The needles whose rendering a selectivity probe may choose (memo filters only)."""
        return needles(self.pred, self.target)

    def render(
        self, *, dialect_name: str, now: int, dense: frozenset[Needle] = frozenset()
    ) -> ColumnElement[bool]:
        """The predicate over ``memo`` (or ``attachment``) for ``dialect_name``.

        ``now`` is applied here, last, so the cached IR never holds a clock.
        Needles in ``dense`` render per row instead of as an IN-list; this
        changes the plan, never the rows.
        """
        renderer = Renderer(
            target=self.target, dialect_name=dialect_name, now=int(now), dense=dense
        )
        return renderer.render(self.pred)


def compile_filter(text: str, target: Target = "memo") -> CompiledFilter:
    """Lower ``text`` once for ``target`` (``FilterError`` naming the problem and offset)."""
    return CompiledFilter(target, lower_filter(text, target))
