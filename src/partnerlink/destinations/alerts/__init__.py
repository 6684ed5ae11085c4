"""Alerts by email (CONTRACT §15): the merchant is told, once per change of state, that a
destination needs their attention or has not synced for PARTNERLINK_AD_STALE_HOURS.

`queries.py` moves each destination's `alert_state` and queues, claims and records the
emails (`destination_alerts`); `letters.py` writes the message; `mail.py` hands it to the
SMTP server; `tasks.py` is the worker's task over them.
"""
