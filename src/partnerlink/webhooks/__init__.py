"""Signed webhooks to partners (CONTRACT.md §9): events, their signing secret, delivery."""
