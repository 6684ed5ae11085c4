"""Whether a request comes from a person's browser: its Accept header names HTML first."""

from __future__ import annotations

# What a program asks for instead; a browser ranks these below HTML, if it names them at all.
_MACHINE_TYPES = ("application/json", "application/problem+json")


def prefers_html(accept: str) -> bool:
    """True when `text/html` is named (not only through `*/*`, which curl and HTTP libraries
    send) and no JSON type is preferred to it."""
    weights: dict[str, float] = {}
    for part in accept.split(","):
        media_type, *params = (item.strip() for item in part.split(";"))
        weight = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        weights[media_type.lower()] = max(weight, weights.get(media_type.lower(), 0.0))
    html = weights.get("text/html", 0.0)
    return html > 0 and all(weights.get(kind, 0.0) <= html for kind in _MACHINE_TYPES)
