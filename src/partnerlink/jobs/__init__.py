"""Background jobs over durable rows: claim with a lease, record while the lease is held,
back off with jitter, give up after a deadline. Written once for every worker task.

A job is a row of its domain's own table (a receipt, a webhook event, an upload), written
in the transaction of what caused it (the transactional outbox), so no broker of its own:
see ARCHITECTURE.md, "Background jobs". The table needs `lease_until` and a one-column
primary key; `attempts` is counted when the table has it.
"""

from partnerlink.jobs.leases import (
    LeaseLost,
    claim_due,
    due_keys,
    lease_is_free,
    record_if_leased,
    renew_lease,
)
from partnerlink.jobs.retries import backoff_seconds, gave_up
from partnerlink.jobs.threads import JobThreads

__all__ = [
    "JobThreads",
    "LeaseLost",
    "backoff_seconds",
    "claim_due",
    "due_keys",
    "gave_up",
    "lease_is_free",
    "record_if_leased",
    "renew_lease",
]
