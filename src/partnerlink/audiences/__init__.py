"""Audiences and customers' choices (CONTRACT.md §8): segments, ad-platform exports,
opt-out and erasure."""
