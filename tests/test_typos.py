"""A misspelt word the vault lacks is corrected before embedding, shown in explain; a
word the vault holds, however rare, is embedded as typed."""

from __future__ import annotations

import pytest

from tests.conftest import write_files
from vaultsearch import Vault
from vaultsearch.search.typos import corrected, surface, unknown_typos
from vaultsearch.store.fuzzy import Expansion

FILES: dict[str, str | bytes] = {
    f"Parcel {i}.md": f"# Parcel {i}\n\nWe receive parcel number {i} at the front desk.\n"
    for i in range(12)
}
FILES["Odd spelling.md"] = "# Odd spelling\n\nMy grandmother wrote recieve in every letter.\n"
FILES["Diagrams.md"] = "# Diagrams\n\nMermaid draws flowcharts from a few lines of text.\n"
FILES["Sourdough.md"] = "# Sourdough\n\nFeed the starter daily and bake when it doubles.\n"


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Vault:
    v = Vault.open(write_files(tmp_path_factory.mktemp("typos") / "vault", FILES))
    v.index()
    return v


def test_an_unknown_word_is_embedded_corrected_and_explained(vault: Vault) -> None:
    hits = vault.search("mermiad flowcharts", explain=True, top_k=3)
    assert hits[0].path == "Diagrams.md"
    assert hits[0].explain is not None
    assert hits[0].explain.embedded == "mermaid flowcharts"
    assert hits[0].explain.to_dict()["embedded"] == "mermaid flowcharts"
    typed = vault.search("mermaid flowcharts", explain=True, top_k=3)[0]
    assert typed.explain is not None and typed.explain.embedded == ""
    assert "embedded" not in typed.explain.to_dict()


def test_a_word_the_vault_holds_is_never_corrected(vault: Vault) -> None:
    hits = vault.search("recieve parcel", explain=True, top_k=3)
    assert hits[0].explain is not None
    # the keyword side still widens the rare spelling to the common one ...
    assert any(e.startswith("recieve~") for e in hits[0].explain.expansions)
    # ... but the model embeds what was typed, as the vault holds it
    assert hits[0].explain.embedded == ""


def test_keyword_mode_embeds_nothing_and_corrects_nothing(vault: Vault) -> None:
    hits = vault.search("mermiad flowcharts", mode="keyword", explain=True, top_k=3)
    assert hits[0].path == "Diagrams.md"
    assert hits[0].explain is not None and hits[0].explain.embedded == ""


def test_pure_parts() -> None:
    exps = [Expansion("hibernaton", "hibern", "typo"), Expansion("canv", "canva", "prefix")]
    assert unknown_typos(exps, lambda t: 0, lambda w: w) == {"hibernaton": "hibern"}
    assert unknown_typos(exps, lambda t: 1, lambda w: w) == {}
    stem = {"hibernation": "hibern", "hibernate": "hibern"}.get
    texts = ["To hibernate, use hibernation."]
    assert surface("hibernaton", "hibern", texts, lambda w: stem(w) or w) == "hibernation"
    assert surface("hibernaton", "other", texts, lambda w: stem(w) or w) == ""
    assert corrected("Hibernaton swap-hibernaton", {"hibernaton": "hibernation"}) == (
        "hibernation swap-hibernation"
    )
    assert corrected("unchanged", {}) == "unchanged"
