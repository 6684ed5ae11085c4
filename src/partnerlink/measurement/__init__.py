"""Measurement (CONTRACT.md §7): campaigns, ad touches, results per class, holdouts and lift."""
