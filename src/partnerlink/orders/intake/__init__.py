"""Order intake: the one pipeline, the fast lane, the journal and the read barrier."""
