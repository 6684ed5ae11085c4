"""ISO 3166-1 alpha-2 countries: which codes exist.

The list is Babel's (CLDR), the one source, as for currencies (kit/currencies.py).
Kept apart from the stores' schemas so that the upload reader process
(customers/ingestion/reader_process.py) normalizes country codes without importing the
web and database layers.
"""

from __future__ import annotations

from functools import lru_cache

from babel import Locale

# Babel's territory list also holds regions and groupings that are not countries
# ("EU", "UN", "ZZ", "001"...) and codes ISO only reserves (Ascension "AC", Canary
# Islands "IC"...): a store must sit in an ISO 3166-1 country. Kosovo's "XK" is kept:
# it is the code every registry uses for it.
_NOT_COUNTRIES = frozenset(
    {"EU", "EZ", "UN", "QO", "ZZ", "XA", "XB", "AC", "CP", "CQ", "DG", "EA", "IC", "TA"}
)


@lru_cache(maxsize=1)
def country_codes() -> frozenset[str]:
    """ISO 3166-1 alpha-2 codes of countries and territories."""
    return frozenset(
        code
        for code in map(str, Locale("en").territories)
        if len(code) == 2 and code.isalpha() and code not in _NOT_COUNTRIES
    )
