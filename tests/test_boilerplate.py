"""A footer repeated in most notes is found from the catalog and weighed down, so the
notes rank by their own passages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write_files
from vaultsearch import Vault
from vaultsearch.search import boilerplate

FOOTER = """

## About these notes

Every note in this vault is synced between my phone and my laptop and backed up nightly.
"""

OWN = {
    "Syncthing.md": "# Syncthing\n\nSyncthing keeps the notes folder of the phone and the "
    "computer in step over the local network, no cloud needed.\n",
    "Bird feeder.md": "# Bird feeder\n\nSunflower seeds bring finches; the feeder hangs "
    "two metres from the window.\n",
    "Sourdough.md": "# Sourdough\n\nFeed the starter flour and water daily and bake when it "
    "doubles in four hours.\n",
    "Bicycle.md": "# Bicycle\n\nOil the chain every two hundred kilometres and check the "
    "brake pads monthly.\n",
    "Tomatoes.md": "# Tomatoes\n\nWater deeply twice a week and stake the plants early.\n",
    "Tea.md": "# Tea\n\nGreen tea steeps at eighty degrees for two minutes.\n",
    "Chess.md": "# Chess\n\nThe Sicilian defence answers e4 with c5.\n",
    "Knots.md": "# Knots\n\nA bowline makes a fixed loop that does not slip.\n",
    "Compost.md": "# Compost\n\nKitchen scraps and leaves turn into humus in months.\n",
    "Stars.md": "# Stars\n\nOrion is easiest to find in winter by its belt.\n",
    "Fern.md": "# Fern\n\nFerns like shade and moist soil.\n",
    "Guitar.md": "# Guitar\n\nTune the low E string first, then the rest by fifths.\n",
}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Vault:
    files: dict[str, str | bytes] = {p: text + FOOTER for p, text in OWN.items()}
    files["Inbox.md"] = "# Inbox\n\nCall the plumber about the kitchen tap.\n"
    root = write_files(tmp_path_factory.mktemp("boilerplate") / "vault", files)
    v = Vault.open(root)
    v.index()
    return v


def test_the_footer_and_only_the_footer_is_boilerplate(vault: Vault) -> None:
    snap = vault.orchestrator.snapshot()
    rows = snap.catalog.chunks()
    footer = {r.id for r in rows if "synced between my phone" in r.text}
    assert len(footer) == len(OWN)
    assert snap.boilerplate == footer


def test_notes_rank_by_their_own_passages_not_the_footer(vault: Vault) -> None:
    hits = vault.search("syncing notes between the phone and the computer", top_k=5)
    assert hits[0].path == "Syncthing.md"
    assert "About these notes" not in hits[0].heading_path
    # the rest match only by the footer: they come after the notes' own matches, shown
    # by their own passage when that is among the candidates
    footer_hits = [h for h in hits if "About these notes" in h.heading_path]
    assert len(footer_hits) < len(hits) - 1


def test_a_text_shared_by_few_notes_is_not_boilerplate(tmp_path: Path) -> None:
    import sqlite3

    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, note_id INTEGER, text TEXT)")
    rows = [(i, i, "shared footer") for i in range(1, 8)]  # 7 of 12 notes, under LEAST
    rows += [(100 + i, i, f"own text {i}") for i in range(1, 13)]
    db.executemany("INSERT INTO chunks VALUES (?, ?, ?)", rows)
    assert boilerplate.find(db, 12).chunks == frozenset()
    rows = [(200 + i, i, "shared footer") for i in range(8, 13)]  # now in every note
    db.executemany("INSERT INTO chunks VALUES (?, ?, ?)", rows)
    assert boilerplate.find(db, 12).chunks == {*range(1, 8), *range(208, 213)}
    assert boilerplate.find(db, 30).chunks == frozenset()  # 12 of 30 notes is not most


def test_found_again_from_the_change_equals_found_whole() -> None:
    """``find_again`` looks only at the lengths of the previous answer and of the added
    chunks: after each change it must give what a whole ``find`` gives."""
    import random
    import sqlite3

    rng = random.Random(3)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, note_id INTEGER, text TEXT)")
    texts = ["footer A", "footer BB", "a longer shared header", *(f"own {i}" for i in range(40))]
    next_id, notes = 1, 24
    for note in range(1, notes + 1):
        for text in [*rng.sample(texts[:3], rng.randint(0, 3)), f"own {note}"]:
            db.execute("INSERT INTO chunks VALUES (?, ?, ?)", (next_id, note, text))
            next_id += 1
    found = boilerplate.find(db, notes)
    kinds = set()
    for _ in range(60):
        note = rng.randint(1, notes + 2)
        db.execute("DELETE FROM chunks WHERE note_id = ?", (note,))
        added = []
        for text in rng.sample(texts, rng.randint(0, 3)):
            db.execute("INSERT INTO chunks VALUES (?, ?, ?)", (next_id, note, text))
            added.append(next_id)
            next_id += 1
        notes = max(notes, note) if rng.random() < 0.8 else max(notes - 2, 12)
        again = boilerplate.find_again(db, notes, found, added)
        found = boilerplate.find(db, notes)
        assert again == found
        kinds.add(len(found.chunks) > 0)
    assert kinds == {True, False}  # the changes made and unmade boilerplate


def test_found_again_reads_only_lengths_that_enough_notes_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An edited chunk whose length few notes have cannot be boilerplate: its length's
    texts are not read (at a million chunks, ~1,100 of them per edited chunk)."""
    import sqlite3

    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, note_id INTEGER, text TEXT)")
    db.execute("CREATE INDEX chunks_by_length ON chunks(length(text), note_id)")
    rows = [(n, "the footer") for n in range(1, 31)] + [
        (n, f"own text {n:03d}") for n in range(1, 31)
    ]
    db.executemany("INSERT INTO chunks (note_id, text) VALUES (?, ?)", rows)
    found = boilerplate.find(db, 30)
    assert found.lengths == {len("the footer")}
    db.execute("INSERT INTO chunks (id, note_id, text) VALUES (1000, 4, 'an edit of three words')")
    read: list[list[int]] = []
    real = boilerplate._of_lengths
    monkeypatch.setattr(
        boilerplate, "_of_lengths", lambda d, ls, least: read.append(list(ls)) or real(d, ls, least)
    )
    assert boilerplate.find_again(db, 30, found, [1000]) == boilerplate.find(db, 30)
    assert read[0] == [len("the footer")]


def test_weigh_down_scales_and_reorders() -> None:
    hits = [(1, 0.9), (2, 0.8), (3, 0.5)]
    assert boilerplate.weigh_down({"semantic": hits}, frozenset({1})) == {
        "semantic": [(2, 0.8), (3, 0.5), (1, 0.9 * boilerplate.WEIGHT)]
    }
    assert boilerplate.weigh_down({"semantic": hits}, frozenset()) == {"semantic": hits}
