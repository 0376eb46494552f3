"""Server-drawn SVG line charts of the metrics history: no script, no library."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from queues_app.figures.counters import MinuteRow, minute_of

WIDTH, HEIGHT, PAD = 300, 70, 4


@dataclass
class Chart:
    label: str
    points: str  # SVG polyline points; empty when there is no data
    latest: float | None
    peak: float
    minutes: int
    unit: str = ""
    second: Chart | None = None  # a second series on the same scale

    @property
    def empty(self) -> bool:
        return not self.points and not (self.second and self.second.points)


def _values(rows: list[MinuteRow], field: str, moment: datetime, minutes: int) -> list[tuple[int, float]]:
    start = moment - timedelta(minutes=minutes - 1)
    slots = {minute_of(start + timedelta(minutes=i)): i for i in range(minutes)}
    return [(slots[r.minute], r.values[field]) for r in rows if r.minute in slots and field in r.values]


def line(
    rows: list[MinuteRow],
    field: str,
    label: str,
    *,
    moment: datetime,
    minutes: int = 60,
    unit: str = "",
    scale: float | None = None,
) -> Chart:
    """One value a minute over the last `minutes`; minutes without a sample leave a gap
    in time (the line joins the samples on either side)."""
    values = _values(rows, field, moment, minutes)
    peak = max((v for _, v in values), default=0.0)
    scale = scale or peak or 1.0
    step = (WIDTH - 2 * PAD) / max(minutes - 1, 1)
    points = " ".join(f"{PAD + i * step:.1f},{HEIGHT - PAD - (v / scale) * (HEIGHT - 2 * PAD):.1f}" for i, v in values)
    return Chart(label, points, values[-1][1] if values else None, peak, minutes, unit)


def pair(rows: list[MinuteRow], first: str, second: str, label: str, *, moment: datetime, minutes: int = 60) -> Chart:
    """Two series on one scale (enqueued and completed a minute)."""
    peak = max(
        (v for _, v in _values(rows, first, moment, minutes) + _values(rows, second, moment, minutes)), default=0.0
    )
    chart = line(rows, first, label, moment=moment, minutes=minutes, scale=peak or 1.0)
    chart.second = line(rows, second, second, moment=moment, minutes=minutes, scale=peak or 1.0)
    chart.peak = peak
    return chart
