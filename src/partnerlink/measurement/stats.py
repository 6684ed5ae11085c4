"""Intervals for conversion rates (Wilson's score interval, Newcombe's difference) and the
power of a test of two rates (the lift planner)."""

from __future__ import annotations

from math import asin, pi, sin, sqrt
from statistics import NormalDist

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


# The lift planner (CONTRACT.md §16): the smallest difference of two conversion rates that a
# two-sided test of two proportions tells apart with the given power, in Cohen's effect size
# h = 2·asin(√p1) − 2·asin(√p2) on the normal approximation, as statsmodels' NormalIndPower
# with proportion_effectsize computes it (checked against it in tests/measurement).
_NORMAL = NormalDist()


def power_of(x: float, z: float) -> float:
    """A two-sided normal test's power: `x` is h·√n (n = n1·n2/(n1+n2)), `z` its critical
    value; both tails count, as statsmodels' normal_power has it."""
    return _NORMAL.cdf(x - z) + _NORMAL.cdf(-x - z)


def detectable_effect(n1: float, n2: float, *, power: float, alpha: float) -> float:
    """The smallest Cohen's h the test detects with `power` at `alpha` (two-sided) with groups
    of n1 and n2: Newton's method on h·√n, from the one-tailed approximation."""
    z = _NORMAL.inv_cdf(1 - alpha / 2)
    x = z + _NORMAL.inv_cdf(power)
    for _ in range(20):
        step = (power_of(x, z) - power) / (_NORMAL.pdf(x - z) - _NORMAL.pdf(-x - z))
        x -= step
        if abs(step) < 1e-13:
            break
    return x / sqrt(n1 * n2 / (n1 + n2))


def rate_with_effect(rate: float, h: float) -> float | None:
    """The rate that is `h` (Cohen's h) above `rate`; None when none is (above 100%)."""
    angle = asin(sqrt(rate)) + h / 2
    return sin(angle) ** 2 if angle <= pi / 2 else None
