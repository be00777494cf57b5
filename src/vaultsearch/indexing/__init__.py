"""Turning a vault into indexes: scanning, parsing, chunking, link resolution."""
