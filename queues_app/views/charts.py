"""Server-drawn SVG line charts of the metrics history: no script, no library."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from ..dynamo.metrics import MinuteRow, minute_of

WIDTH, HEIGHT, PAD = 300, 70, 4


@dataclass
class Chart:
    label: str
    points: str  # SVG polyline points; empty when there is no data
    latest: float | None
    peak: float
    minutes: int
    unit: str = ""

    @property
    def empty(self) -> bool:
        return not self.points


def line(rows: list[MinuteRow], field: str, label: str, *, moment: datetime, minutes: int = 60,
         unit: str = "") -> Chart:
    """One value a minute over the last `minutes`; minutes without a sample leave a gap
    in time (the line joins the samples on either side)."""
    start = moment - timedelta(minutes=minutes - 1)
    slots = {minute_of(start + timedelta(minutes=i)): i for i in range(minutes)}
    values = [(slots[r.minute], r.values[field]) for r in rows if r.minute in slots and field in r.values]
    peak = max((v for _, v in values), default=0.0)
    scale = peak or 1.0
    step = (WIDTH - 2 * PAD) / max(minutes - 1, 1)
    points = " ".join(f"{PAD + i * step:.1f},{HEIGHT - PAD - (v / scale) * (HEIGHT - 2 * PAD):.1f}" for i, v in values)
    return Chart(label, points, values[-1][1] if values else None, peak, minutes, unit)
