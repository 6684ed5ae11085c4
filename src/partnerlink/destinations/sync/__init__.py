"""The ad-platform sync engine: a destination's audience or conversions, sent and recorded."""
