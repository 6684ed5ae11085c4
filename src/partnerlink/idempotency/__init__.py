"""Idempotency keys (CONTRACT.md §13): a request sent again with the same key answers the
first answer again and applies nothing."""
