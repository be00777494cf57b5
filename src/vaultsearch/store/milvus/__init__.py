"""The index in Milvus: the same chunks, vectors, keywords, filters and links as the
local store, in collections a reader can search with nothing but the URI.

The local catalog stays the staging area and the source of truth: a push copies what it
holds (its cached vectors, never the model), and ``sync`` after an index run upserts
and deletes only the rows that changed. pymilvus is imported only inside this package
and the modules of the other layers that use it (``search/milvus_reader.py``,
``search/milvus_expressions.py``, ``milvus_push.py``), and only when a Milvus store is
used (the ``milvus`` extra).

The seam for the store contract is small on purpose: ``MilvusTarget`` (where), ``push``
and ``sync`` (the write side, from a catalog) and ``MilvusReader`` (``search``, ``get``,
``status``).
"""

from __future__ import annotations

from vaultsearch.store.milvus.target import MilvusTarget

__all__ = ["MilvusTarget"]
