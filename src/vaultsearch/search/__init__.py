"""Retrieval, fusion and ranking: from query text to hits."""
