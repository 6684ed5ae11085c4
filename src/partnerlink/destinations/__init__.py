"""Ad platforms (CONTRACT.md §11): audiences and sales sent where the ads run."""
