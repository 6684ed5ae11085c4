"""The Results page's weekly chart, laid out here and drawn by the template as SVG."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partnerlink.orders.conversion import CLASSES

WIDTH, HEIGHT = 640, 240
LEFT, BOTTOM, TOP = 40, 28, 10
COLOURS = {"new": "#1f7a4d", "returning": "#3b6fd4", "organic": "#9aa3ad", "anonymous": "#d6dae0"}


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    fill: str
    label: str


def weekly_chart(weeks: list[dict[str, Any]]) -> dict[str, Any]:
    """Stacked bars of orders by class, one per week, in a WIDTH x HEIGHT view box."""
    top = max([sum(w[k] for k in CLASSES) for w in weeks] + [1])
    plot_height = HEIGHT - BOTTOM - TOP
    slot = (WIDTH - LEFT) / max(len(weeks), 1)
    bars: list[Bar] = []
    ticks = []
    for index, week in enumerate(weeks):
        x = LEFT + index * slot + slot * 0.15
        y = HEIGHT - BOTTOM
        for name in CLASSES:
            height = week[name] / top * plot_height
            if height > 0:
                y -= height
                label = f"{week['weekStart']}: {week[name]} {name}"
                bars.append(Bar(x, y, slot * 0.7, height, COLOURS[name], label))
        ticks.append({"x": x + slot * 0.35, "label": week["weekStart"][5:]})
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "left": LEFT,
        "base": HEIGHT - BOTTOM,
        "top_y": TOP,
        "top": top,
        "bars": bars,
        "ticks": ticks,
        "legend": [(name, COLOURS[name]) for name in CLASSES],
    }
