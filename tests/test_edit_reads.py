"""What an edit reads of the catalog: the rows of the paths the watcher names, found
through the path index (``Catalog.file_states_under``), must be exactly the rows a scan of
every note keeps for them, folders named by a prefix included."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import live_catalog, write_files
from vaultsearch import Vault

FILES = {
    "a/One.md": "# One\n\nfirst\n",
    "a/b/Two.md": "# Two\n\nsecond\n",
    "ab/Three.md": "# Three\n\nthird\n",
    "a.md": "# A\n\nthe note beside the folder\n",
    "c/Four.md": "# Four\n\nfourth\n",
}


def test_rows_of_named_paths_and_folders_are_those_a_full_read_keeps(
    tmp_path: Path, embedder: object
) -> None:
    root = write_files(tmp_path / "vault", FILES)
    with Vault.open(root, index_dir=tmp_path / "index") as vault:
        vault.index()
    catalog = live_catalog(tmp_path / "index")
    try:
        every = catalog.file_states()
        for paths in (["a"], ["a/"], ["a/b/Two.md", "c"], ["a.md"], ["gone.md", "ab"], []):
            prefixes = tuple(p.rstrip("/") + "/" for p in paths)
            want = {p: v for p, v in every.items() if p in paths or p.startswith(prefixes)}
            assert catalog.file_states_under(paths, prefixes) == want, paths
        assert set(catalog.file_states_under(["a"], ["a/"])) == {"a/One.md", "a/b/Two.md"}
    finally:
        catalog.close()
