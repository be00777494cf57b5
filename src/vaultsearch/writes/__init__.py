"""Changing the vault on an agent's behalf: notes, raw documents, links after a move."""
