"""Holdout assignment (CONTRACT.md §7): fixed, reproducible, keyed by the campaign's salt."""

from __future__ import annotations

from partnerlink.kit.digests import hmac_sha256

TEST = "test"
CONTROL = "control"


def is_control(salt: bytes, customer_id: int, holdout_percent: int) -> bool:
    """True when the customer is in the campaign's control group.

    The first 8 hex digits of HMAC-SHA256(salt, str(customer_id)), read as an
    integer, below `holdout_percent` % of 2^32.
    """
    if holdout_percent <= 0:
        return False
    digest = hmac_sha256(salt, str(customer_id).encode()).hex()
    return int(digest[:8], 16) * 100 < holdout_percent * 2**32


def group_of(salt: bytes, customer_id: int, holdout_percent: int) -> str:
    return CONTROL if is_control(salt, customer_id, holdout_percent) else TEST
