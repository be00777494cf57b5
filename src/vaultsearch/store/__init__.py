"""The on-disk index: the catalog, its derived indexes, and how readers and writers share them."""
