"""Latency series, percentiles, progress lines and tables, shared by every benchmark."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ascending values, linearly interpolated."""
    if not sorted_values:
        return math.nan
    rank = (len(sorted_values) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    if low == high:
        return sorted_values[low]
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (rank - low)


@dataclass(frozen=True, slots=True)
class Stats:
    """One timed series: latencies in milliseconds, throughput in calls per second."""

    n: int
    p50_ms: float
    p95_ms: float
    mean_ms: float
    max_ms: float
    per_second: float
    cpu_ms: float = math.nan  # this process's CPU time per call (all threads)

    @classmethod
    def of(cls, samples_s: Sequence[float], wall_s: float, cpu_s: float = math.nan) -> Stats:
        ordered = sorted(s * 1000 for s in samples_s)
        return cls(
            n=len(ordered),
            p50_ms=round(percentile(ordered, 50), 3),
            p95_ms=round(percentile(ordered, 95), 3),
            mean_ms=round(sum(ordered) / len(ordered), 3) if ordered else math.nan,
            max_ms=round(ordered[-1], 3) if ordered else math.nan,
            per_second=round(len(ordered) / wall_s, 1) if wall_s > 0 else math.nan,
            cpu_ms=round(cpu_s * 1000 / len(ordered), 3) if ordered else math.nan,
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def cell(self) -> str:
        """``p50 / p95`` for a table cell."""
        return f"{fmt_ms(self.p50_ms)} / {fmt_ms(self.p95_ms)}"


async def measure(
    call: Callable[[], Awaitable[object]],
    *,
    label: str,
    requests: int,
    warmup: int = 10,
    budget_s: float | None = None,
    min_requests: int = 20,
) -> Stats:
    """Time ``requests`` sequential calls after ``warmup`` untimed ones.

    With ``budget_s``, stop early once the budget is spent and at least
    ``min_requests`` were timed (for baselines that take seconds per call);
    the returned ``n`` says how many were timed.
    """
    for _ in range(warmup):
        await call()
    progress = Progress(label, requests, unit="req")
    samples: list[float] = []
    cpu_start = time.process_time()
    start = time.perf_counter()
    for _ in range(requests):
        t0 = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - t0)
        progress.advance(1)
        spent = time.perf_counter() - start
        if budget_s is not None and spent > budget_s and len(samples) >= min_requests:
            break
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    progress.done()
    return Stats.of(samples, wall, cpu)


class Progress:
    """A single rewritten stderr line: count, percentage, rate and ETA."""

    def __init__(self, label: str, total: int, *, unit: str = "rows", every_s: float = 0.5):
        self.label, self.total, self.unit, self.every_s = label, total, unit, every_s
        self.count = 0
        self.start = self.last = time.perf_counter()

    def advance(self, n: int) -> None:
        self.count += n
        now = time.perf_counter()
        if now - self.last >= self.every_s:
            self.last = now
            self._write(now, final=False)

    def done(self) -> float:
        """Finish the line; returns the elapsed seconds."""
        now = time.perf_counter()
        self._write(now, final=True)
        return now - self.start

    def _write(self, now: float, *, final: bool) -> None:
        elapsed = max(now - self.start, 1e-9)
        rate = self.count / elapsed
        pct = 100 * self.count / self.total if self.total else 100.0
        tail = (
            f"in {elapsed:.1f}s"
            if final
            else f"eta {max(self.total - self.count, 0) / rate if rate else 0:.0f}s"
        )
        line = (
            f"\r  {self.label}: {self.count:,}/{self.total:,} {self.unit} ({pct:.0f}%) "
            f"{rate:,.0f} {self.unit}/s {tail}"
        )
        sys.stderr.write(line.ljust(100) + ("\n" if final else ""))
        sys.stderr.flush()


def step(message: str) -> None:
    """A one-line status message on stderr."""
    sys.stderr.write(f"- {message}\n")
    sys.stderr.flush()


def fmt_ms(value: float) -> str:
    if math.isnan(value):
        return "—"
    if value >= 100:
        return f"{value:,.0f} ms"
    return f"{value:.1f} ms" if value >= 10 else f"{value:.2f} ms"


def ratio(slow: float, fast: float) -> str:
    """``slow / fast`` as ``12.3×`` (how many times faster ``fast`` is)."""
    if fast <= 0 or math.isnan(slow) or math.isnan(fast):
        return "—"
    value = slow / fast
    return f"{value:,.0f}×" if value >= 100 else f"{value:.1f}×"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table with padded columns."""
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows, strict=False)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "| " + " | ".join("-" * w for w in widths) + " |"
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])
