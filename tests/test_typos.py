"""A misspelt word the vault lacks is corrected before embedding, shown in explain; a
word the vault holds, however rare, is embedded as typed."""

from __future__ import annotations

import pytest

from tests.conftest import write_files
from vaultsearch import Vault
from vaultsearch.search.typos import (
    Fix,
    corrected,
    is_word,
    one_edit,
    spelled,
    sure,
    surface,
    unknown_typos,
)
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
FILES["Journal.md"] = "# Journal\n\nWrite every morning, write by hand, write slowly.\n"
FILES["Fence.md"] = "# Fence\n\nThe fence is held by wire.\n"
FILES["Publishing.md"] = "# Publishing\n\nSet nav_exclude_children to hide a page's children.\n"
FILES["Cheese Cave.md"] = "# Cheese Cave\n\nAge the wheels at a steady temperature.\n"
FILES["Dock.md"] = "# Dock\n\nOne button minimizes every window, minimal fuss.\n"
FILES["Taste.md"] = "# Taste\n\nA liking for bitter coffee grows slowly.\n"


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


def test_a_word_the_model_knows_whole_is_never_corrected(vault: Vault) -> None:
    # "hiking" is one edit from the vault's "liking", but it is a word, not a slip of one
    hits = vault.search("hiking boots", explain=True, top_k=3)
    assert hits and hits[0].explain is not None
    assert hits[0].explain.embedded == ""
    assert not [e for e in hits[0].explain.expansions if e.startswith("hiking~")]


def test_a_fix_is_embedded_as_a_word_the_vault_holds(vault: Vault) -> None:
    # "minimives" is one edit from "minimises" and stems to "minim" like the vault's
    # "minimizes": the model must be given the vault's word, not that non-word
    hits = vault.search("button that minimises every window", explain=True, top_k=3)
    assert hits[0].path == "Dock.md"
    assert hits[0].explain is not None
    assert hits[0].explain.embedded == "button that minimizes every window"


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


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        # a swap whose stem is one edit from a rarer word ("wirt" -> "wire"): the
        # commoner word one edit from what was typed wins
        ("wirte every morning", "write every morning"),
        # cut short and mistyped: no word is one edit away, a word begins one
        ("folwcha text", "flowcha text"),
        # a word inside an identifier
        ("nav_exclued_children", "nav_exclude_children"),
    ],
)
def test_a_misspelt_query_finds_what_the_clean_one_finds(
    vault: Vault, typed: str, meant: str
) -> None:
    clean = vault.search(meant, top_k=3)
    hits = vault.search(typed, explain=True, top_k=3)
    assert hits[0].path == clean[0].path
    assert hits[0].explain is not None and hits[0].explain.embedded.startswith(meant.split()[0][:4])


def test_a_misspelt_note_name_still_takes_the_name_match(vault: Vault) -> None:
    hits = vault.search("Cheese Cvae", explain=True, top_k=3)
    assert hits[0].path == "Cheese Cave.md"
    assert hits[0].explain is not None and hits[0].explain.name_added > 0
    assert hits[0].explain.embedded == "Cheese cave"


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
    assert corrected("nav_exclued_children", {"exclued": "exclude"}) == "nav_exclude_children"
    assert corrected("unexclued exclued2", {"exclued": "exclude"}) == "unexclued exclued2"


def test_one_edit_and_spelled() -> None:
    def stem(w: str) -> str:
        return w[:-2] if w.endswith("ed") else w

    df = {"collect": 3, "collide": 1}.get
    found = one_edit("colelcted", lambda t: df(t) or 0, stem)
    assert [(f.word, f.term, f.chunks) for f in found] == [("collected", "collect", 3)]
    assert one_edit("zzzzzz", lambda t: df(t) or 0, stem) == []
    assert one_edit("clt", lambda t: 5, stem) == []  # too short to guess
    # the commoner of two one-edit words first: "wirte" is "write" before "wire"
    counts = {"write": 40, "wire": 2}.get
    found = one_edit("wirte", lambda t: counts(t) or 0, lambda w: w)
    assert [f.word for f in found] == ["write", "wire"]
    assert sure(found, 3.0) and not sure(found, 30.0) and not sure([], 3.0)
    # a swap is likelier than one of the 25 letters a letter could have been changed to,
    # so a rarer swapped word can come before a commoner changed one
    counts = {"salaf": 12, "slaac": 2}.get
    found = one_edit("salac", lambda t: counts(t) or 0, lambda w: w)
    assert [f.word for f in found] == ["slaac", "salaf"]
    top = one_edit("salac", lambda t: 100 * (t == "salaf") + 2 * (t == "slaac"), str)[0]
    assert top == Fix("salaf", "salaf", 100, 100 / 25 / 5)  # unless the other is far commoner
    # a word cut short and mistyped: no variant is a term, one begins a term
    begun = {"subsamp": ("subsampl", 4)}

    def begins(prefix: str) -> tuple[str, int]:
        return begun.get(prefix, ("", 0))

    found = one_edit("susbamp", lambda t: 0, lambda w: w, begins)
    assert [(f.word, f.term, f.chunks) for f in found] == [("subsamp", "subsampl", 4)]
    assert one_edit("susbamp", lambda t: 0, lambda w: w) == []
    assert spelled("colelcted", "collect", stem) == "collected"
    assert spelled("colelcted", "other", stem) == ""
    # a string one edit away that stems right is given only when it is a word
    minim = {"minimizes": "minim", "minimives": "minim", "minimal": "minim"}.get
    assert spelled("minimises", "minim", lambda w: minim(w) or w) == ""
    assert spelled("minimises", "minim", lambda w: minim(w) or w, ["It minimizes."]) == (
        "minimizes"
    )
    # no word evidenced: the one likeliest slip (the only swap) undoes what was typed
    calend = {"calender": "calend", "calendly": "calend"}.get
    assert spelled("calneder", "calend", lambda w: calend(w) or w) == "calender"
    assert is_word("Hiking") and is_word("mortgage") and not is_word("minimives")
