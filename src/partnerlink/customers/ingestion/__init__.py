"""Customer-file ingestion: an upload read, normalized, matched and written in batches."""
