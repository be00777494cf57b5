"""The three indexes and the catalog they are derived from."""
