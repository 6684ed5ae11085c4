"""Intervals for conversion rates: Wilson's score interval and Newcombe's difference."""

from __future__ import annotations

from math import sqrt

Z95 = 1.959963984540054  # the normal distribution's 97.5th percentile


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for a proportion (0/0 gives the uninformative [0, 1])."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(x1: int, n1: int, x2: int, n2: int, z: float = Z95) -> tuple[float, float]:
    """Newcombe's hybrid score interval (his method 10) for p1 - p2, from Wilson intervals."""
    p1, p2 = x1 / n1, x2 / n2
    l1, u1 = wilson(x1, n1, z)
    l2, u2 = wilson(x2, n2, z)
    difference = p1 - p2
    low = difference - sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = difference + sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return low, high
