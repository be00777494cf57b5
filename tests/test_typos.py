"""A misspelt word the vault lacks is corrected before embedding, shown in explain; a
word the vault holds, however rare, is embedded as typed."""

from __future__ import annotations

import pytest

from tests.conftest import write_files
from vaultsearch import Vault
from vaultsearch.search.typos import corrected, one_edit, spelled, surface, unknown_typos
from vaultsearch.store.fuzzy import Expansion

FILES: dict[str, str | bytes] = {
    f"Parcel {i}.md": f"# Parcel {i}\n\nWe receive parcel number {i} at the front desk.\n"
    for i in range(12)
}
FILES["Odd spelling.md"] = "# Odd spelling\n\nMy grandmother wrote recieve in every letter.\n"
FILES["Diagrams.md"] = "# Diagrams\n\nMermaid draws flowcharts from a few lines of text.\n"
FILES["Sourdough.md"] = "# Sourdough\n\nFeed the starter daily and bake when it doubles.\n"
FILES["Beowulf.md"] = "---\naliases: [Grendel]\n---\n# Beowulf\n\nThe hero fights a monster.\n"
FILES["Grendal Street.md"] = "# Grendal Street\n\nGrendal street has a bakery.\n"
FILES["Flours.md"] = "# Flours\n\nThe difference between rye and spelt is their gluten.\n"


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


def test_a_word_only_an_alias_holds_is_never_corrected(vault: Vault) -> None:
    # no chunk's text holds "grendel", one edit from the text's "grendal"; the alias does
    hits = vault.search("grendel monster", explain=True, top_k=3)
    assert hits[0].path == "Beowulf.md"
    assert hits[0].explain is not None and hits[0].explain.embedded == ""


def test_keyword_mode_embeds_nothing_and_corrects_nothing(vault: Vault) -> None:
    hits = vault.search("mermiad flowcharts", mode="keyword", explain=True, top_k=3)
    assert hits[0].path == "Diagrams.md"
    assert hits[0].explain is not None and hits[0].explain.embedded == ""


def test_a_typo_in_the_ending_is_corrected_although_its_stem_is_far(vault: Vault) -> None:
    # "diffreence" stems to "diffreenc", four edits from the index's "differ": the
    # keyword side's stem comparison finds nothing, the word one edit away as typed does
    hits = vault.search("diffreence gluten", explain=True, top_k=3)
    assert hits[0].path == "Flours.md"
    assert hits[0].explain is not None and hits[0].explain.embedded == "difference gluten"
    keyword = vault.search("diffreence", mode="keyword", top_k=3)
    assert [h.path for h in keyword][:1] == ["Flours.md"]


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


def test_one_edit_and_spelled() -> None:
    def stem(w: str) -> str:
        return w[:-2] if w.endswith("ed") else w

    df = {"collect": 3, "collide": 1}.get
    assert one_edit("colelcted", lambda t: df(t) or 0, stem) == "collected"
    assert one_edit("zzzzzz", lambda t: df(t) or 0, stem) == ""
    assert one_edit("clt", lambda t: 5, stem) == ""  # too short to guess
    assert spelled("colelcted", "collect", stem) == "collected"
    assert spelled("colelcted", "other", stem) == ""
