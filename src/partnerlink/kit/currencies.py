"""ISO 4217 currencies: which codes exist, and how many minor units each has.

The list is Babel's (CLDR), the one source; ISO's "N.A." minor units are added here,
since CLDR gives those codes two digits.
"""

from __future__ import annotations

from functools import lru_cache

from babel.numbers import get_currency_precision, list_currencies

# ISO 4217 gives these codes no minor unit ("N.A."): units of account, precious metals,
# the testing code XTS and "no currency" XXX. CLDR falls back to 2 digits for them.
NO_MINOR_UNIT = frozenset(
    {"XAG", "XAU", "XBA", "XBB", "XBC", "XBD", "XDR", "XPD", "XPT", "XSU", "XTS", "XUA", "XXX"}
)


@lru_cache(maxsize=1)
def currency_codes() -> frozenset[str]:
    """ISO 4217 codes known to Babel."""
    return frozenset(list_currencies())


def minor_units(code: str) -> int:
    """Digits after the decimal point of an amount in this currency: USD 2, JPY 0, KWD 3,
    XTS 0 (ISO: none)."""
    return 0 if code in NO_MINOR_UNIT else int(get_currency_precision(code))
