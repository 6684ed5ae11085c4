"""Money on every page: one formatting, in the locale the page asks for.

The minor-unit count comes from ISO 4217 via Babel (JPY has none, KWD three).
Receipts use the store country's English conventions (`locale_for`); the
merchant console uses en_US. Values that do not parse are shown as given.
"""

from __future__ import annotations

from decimal import Decimal
from functools import lru_cache

from babel import Locale, UnknownLocaleError
from babel.numbers import format_currency, format_decimal

from partnerlink.kit.currencies import NO_MINOR_UNIT, minor_units

EN_US = Locale.parse("en_US")


@lru_cache(maxsize=256)
def locale_for(country_code: str | None) -> Locale:
    """English with the store country's conventions where CLDR has them (en_DE), else en."""
    if country_code:
        try:
            return Locale.parse(f"en_{country_code.upper()}")
        except (UnknownLocaleError, ValueError):
            pass
    return Locale.parse("en")


# Codes without a minor unit (kit/currencies.py): CLDR draws XXX as "¤", so they are
# written by code, in whole units: 5 XXX is "XXX 5".
_NBSP = "\u00a0"


def format_money(minor: object, currency: object, locale: Locale = EN_US) -> str:
    """'2400' USD → '$24.00'; '1234' JPY → '¥1,234'; '1234' KWD → 'KWD 1.234';
    '5' XTS → 'XTS 5'; '-5' USD → '-$0.05' (the sign always first, never lost).

    Without a currency (a store whose currency is not set yet) the amount is written
    alone, in two decimals: '24.00'.
    """
    currency = str(currency or "").upper()
    try:
        units = int(str(minor))
        if currency in NO_MINOR_UNIT:
            text = currency + _NBSP + format_decimal(abs(units), format="#,##0", locale=locale)
        else:
            digits = minor_units(currency) if currency else 2
            amount = Decimal(abs(units)).scaleb(-digits)
            text = str(format_currency(amount, currency, locale=locale)).strip()
    except (ValueError, ArithmeticError):
        return str(minor)
    # A currency without a symbol is written by its code: "KWD 1.234", not "KWD1.234".
    if (
        currency
        and text.startswith(currency)
        and text[len(currency) : len(currency) + 1] not in ("", " ", _NBSP)
    ):
        text = f"{currency}{_NBSP}{text[len(currency) :]}"
    return f"-{text}" if units < 0 else text
