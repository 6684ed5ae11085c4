"""Domain-free rules written once: digests and signing, storable text, currencies.

The bottom layer: it imports nothing of ours, and every package may import it.
A rule lands here only when it knows nothing of any domain (no table, no setting).
"""
