"""Code and PDF files through the real indexer, model, Tantivy and FAISS."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import WriteVault
from tests.pdfs import make_pdf
from vaultsearch import Vault

CART = b'''"""Shopping cart."""
from decimal import Decimal


class Cart:
    """Items a customer is about to buy."""

    def total_price(self, items):
        """Sum of every item's price times its quantity."""
        return sum(i.price * i.qty for i in items)

    def loadUserProfileFromCache(self, key):
        return self.store[key]
'''

FILES: dict[str, str | bytes] = {
    "Notes/Groceries.md": "# Groceries\n\nBuy apples and bread on Saturday.\n",
    "shop/cart.py": CART,
    "shop/util.rb": b"def shout(text)\n  text.upcase\nend\n",
    "papers/energy.pdf": make_pdf(
        [
            ["Solar panels", "Photovoltaic cells turn sunlight into electric power."],
            ["Wind turbines", "Long blades spin a generator in the wind."],
        ],
        title="Energy Guide",
    ),
    "papers/secret.pdf": make_pdf([["Top secret."]], user_password="letmein"),
    "papers/broken.pdf": make_pdf([["Cut short."]])[:500],
}


def test_code_and_pdfs_are_indexed_and_bad_pdfs_are_recorded(
    write_vault: WriteVault, embedder: object
) -> None:
    vault = Vault.open(write_vault(FILES))
    summary = vault.index()
    assert summary.added == 4
    assert set(summary.failed) == {"papers/secret.pdf", "papers/broken.pdf"}
    assert "needs a password" in summary.failed["papers/secret.pdf"]
    assert summary.failed["papers/broken.pdf"].startswith("unreadable PDF")
    status = vault.status()
    assert status["notes"] == 4 and set(status["failed"]) == set(summary.failed)

    hits = vault.search("photovoltaic sunlight", top_k=3)
    assert hits[0].path == "papers/energy.pdf"
    assert (hits[0].title, hits[0].heading_path) == ("Energy Guide", "Page 1")
    wind = vault.search("blades spinning in the wind", top_k=3)
    assert (wind[0].path, wind[0].heading_path) == ("papers/energy.pdf", "Page 2")

    price = vault.search("sum of the price times quantity of items", top_k=3)
    assert (price[0].path, price[0].heading_path) == ("shop/cart.py", "Cart > total_price")
    assert price[0].title == "shop.cart"

    again = vault.index()
    assert (again.added, again.updated, again.chunks_embedded) == (0, 0, 0)
    vault.close()


def test_identifier_parts_find_camel_case_code(write_vault: WriteVault, embedder: object) -> None:
    vault = Vault.open(write_vault(FILES))
    vault.index()
    for query in ("user profile cache", "load_user_profile", "loadUserProfileFromCache"):
        hits = vault.search(query, top_k=3, mode="keyword")
        assert hits and hits[0].heading_path == "Cart > loadUserProfileFromCache", query
    vault.close()


def test_a_moved_code_file_is_parsed_again_under_its_new_module(
    write_vault: WriteVault, embedder: object
) -> None:
    root = write_vault({"shop/cart.py": CART})
    vault = Vault.open(root)
    vault.index()
    (root / "store").mkdir()
    (root / "shop/cart.py").rename(root / "store/basket.py")
    summary = vault.index()
    assert summary.moved == 0 and summary.added == 1 and summary.removed == 1
    assert summary.chunks_embedded > 0  # the embedded title is the new module path
    hits = vault.search("sum of the price times quantity", top_k=1)
    assert (hits[0].path, hits[0].title) == ("store/basket.py", "store.basket")
    assert vault.manager().verify().problems == []
    vault.close()


def test_docs_vault_indexes_the_same_files() -> None:
    docs = Path(__file__).resolve().parent.parent / "docs"
    from vaultsearch.indexing.scan import IgnoreRules, scan_vault
    from vaultsearch.parsers import ParserRegistry

    found = scan_vault(docs, IgnoreRules(docs), ParserRegistry())
    assert found and all(p.endswith(".md") for p in found)
