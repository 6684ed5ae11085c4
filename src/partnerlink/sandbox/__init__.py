"""Sandbox partners (CONTRACT.md §9): test stores and pairing codes with no merchant, test webhooks."""
