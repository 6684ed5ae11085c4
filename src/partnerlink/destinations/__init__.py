"""Ad-platform destinations: audiences and sales sent where the ads run (CONTRACT §11)."""
