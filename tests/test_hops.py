"""The hop gift on a small real vault: the answer to a question asked through a note is
only reachable through that note's link, and reads like the answer; another link of
the same note does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write_files
from vaultsearch import Vault
from vaultsearch.models import Hit
from vaultsearch.search.hops import link_sentence
from vaultsearch.search.ranking import FusionSettings

FILES = {
    "projects/Falcon.md": """
        # Project Falcon
        Project Falcon is the secure messaging rollout for the field teams.
        How the messages travel is written up in [[Transport Layer]].
        Owner: Alice, who keeps the [[Office plants]] alive. Launch planned for March.
        """,
    "tech/Transport Layer.md": """
        # Transport Layer
        Every message is sealed with ChaCha20-Poly1305; session keys come from an X25519
        exchange and are rotated hourly.
        """,
    "home/Office plants.md": """
        # Office plants
        The fern by the window wants water on Mondays; the cactus once a month.
        """,
    "meetings/Falcon kickoff.md": """
        # Falcon kickoff
        Project Falcon kickoff meeting: scope, owners and the March launch of the messaging rollout.
        """,
    "meetings/Falcon budget.md": """
        # Falcon budget
        Budget for Project Falcon: licences, phones for the field teams, training.
        """,
    "meetings/Falcon hiring.md": """
        # Falcon hiring
        Project Falcon needs two more engineers for the messaging rollout.
        """,
    "meetings/Falcon retro.md": """
        # Falcon retro
        Retrospective of Project Falcon's pilot with the field teams.
        """,
    "tech/Ciphers history.md": """
        # Ciphers history
        The Caesar shift and the Enigma machine were famous historical ciphers.
        """,
}
QUESTION = "which cipher protects Project Falcon's messages"
ANSWER = "tech/Transport Layer.md"


def _indexed(folder: Path, files: dict[str, str | bytes]) -> Vault:
    vault = Vault.open(write_files(folder / "vault", files))
    vault.index()
    return vault


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Vault:
    return _indexed(tmp_path_factory.mktemp("hops"), FILES)


def search(vault: Vault, weight: float, mode: str = "hybrid") -> list[Hit]:
    config = vault.config.with_search(
        hop_weight=weight, hop_top=1, hop_margin=0.0, hop_anchor=False, hop_below=False
    )
    return Vault(vault.root, vault.index_dir, config).search(
        QUESTION, mode=mode, top_k=10, explain=True
    )


def test_the_linked_answer_enters_the_top_hits_only_with_the_hop_gift(vault: Vault) -> None:
    off = [h.path for h in search(vault, 0.0)]
    assert off[0] == "projects/Falcon.md" and ANSWER not in off[:3]
    hits = search(vault, 2.0)
    on = [h.path for h in hits]
    assert ANSWER in on[:3]
    assert (
        on.index(ANSWER) < on.index("home/Office plants.md")
        and "home/Office plants.md" not in on[:3]
    )
    answer = hits[on.index(ANSWER)].explain
    assert answer and answer.graph_from == "projects/Falcon.md"
    plants = hits[on.index("home/Office plants.md")].explain
    assert plants and answer.graph_added > 3 * plants.graph_added


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_explain_adds_up_with_the_hop_gift(vault: Vault, mode: str) -> None:
    hits = search(vault, 2.0, mode)
    assert any(h.explain and h.explain.graph_added > 0.3 for h in hits)
    for h in hits:
        assert h.explain is not None
        assert h.explain.total == pytest.approx(h.score, abs=1e-12)


def test_keyword_mode_takes_no_hop_gift(vault: Vault) -> None:
    config = vault.config.with_search(hop_weight=2.0)
    assert FusionSettings.from_config(config.search, "keyword").hop_weight == 0.0
    assert FusionSettings.from_config(config.search, "hybrid").hop_weight == 2.0


TRAVEL = "how do Project Falcon's messages travel"


def anchored(vault: Vault, weight: float, below: bool = False, mode: str = "hybrid") -> list[Hit]:
    config = vault.config.with_search(
        hop_weight=weight, hop_top=3, hop_margin=0.0, hop_anchor=True, hop_below=below,
        hop_local=False,
    )  # fmt: skip
    return Vault(vault.root, vault.index_dir, config).search(
        TRAVEL, mode=mode, top_k=10, explain=True
    )


@pytest.mark.parametrize("below", [False, True])
def test_a_link_is_judged_by_the_sentence_it_stands_in(vault: Vault, below: bool) -> None:
    # "How the messages travel is written up in [[Transport Layer]]" holds a query word
    # beyond the top note's title; the sentence linking the plants holds none
    off = [h.path for h in anchored(vault, 0.0)]
    assert off[0] == "projects/Falcon.md" and ANSWER not in off[:3], off
    hits = anchored(vault, 1.0, below)
    on = [h.path for h in hits]
    assert on[0] == "projects/Falcon.md" and ANSWER in on[:3]
    answer = hits[on.index(ANSWER)].explain
    assert answer and answer.graph_from == "projects/Falcon.md" and answer.graph_added > 0
    plants = [h.explain for h in hits if h.path == "home/Office plants.md"]
    assert all(e is not None and e.graph_added < answer.graph_added / 3 for e in plants)
    for h in hits:
        assert h.explain is not None
        assert h.explain.total == pytest.approx(h.score, abs=1e-12)


def test_link_sentence_is_the_sentence_holding_the_link() -> None:
    line = "Seeds ingest outside content. They differ from [[pods|x.pod]] in that way! Done."
    assert link_sentence(line, ("pods", "x.pod")) == "They differ from [[pods|x.pod]] in that way!"
    assert link_sentence("no link named here", ("other",)) == "no link named here"


LOCAL_FILES = {
    "energy/Batteries.md": """
        # Batteries
        ## Related
        - [[Cell chemistry]] of lithium cells
        ## Charging
        On the first charge of a lithium cell the electrolyte reacts at the anode: the
        formation of the solid electrolyte interface, a film that keeps electrons out while
        the ions still pass. How fast it grows is measured in [[Capacity fade]].
        """,
    "energy/Cell chemistry.md": """
        # Cell chemistry
        Cathodes are metal oxides; anodes are graphite held in a copper foil.
        """,
    "energy/Capacity fade.md": """
        # Capacity fade
        A cell loses a little of what it holds with every cycle.
        """,
    "energy/Solar panels.md": """
        # Solar panels
        Panels turn light into current; an inverter feeds it to the house.
        """,
    "energy/Wind.md": """
        # Wind
        A turbine's output grows with the cube of the wind speed.
        """,
}
DEEP = "formation of the solid electrolyte interface when a lithium cell is first charged"
GROWTH = "how fast the solid electrolyte interface of a lithium cell grows, measured"


@pytest.fixture(scope="module")
def sections(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Vault:
    return _indexed(tmp_path_factory.mktemp("hop-local"), LOCAL_FILES)


def local_search(vault: Vault, query: str, local: bool) -> dict[str, Hit]:
    config = vault.config.with_search(
        hop_weight=3.0, hop_top=3, hop_margin=0.0, hop_anchor=True, hop_below=True,
        hop_local=local,
    )  # fmt: skip
    hits = Vault(vault.root, vault.index_dir, config).search(
        query, mode="hybrid", top_k=10, explain=True
    )
    for h in hits:
        assert h.explain is not None
        assert h.explain.total == pytest.approx(h.score, abs=1e-12)
    return {h.path: h for h in hits}


def test_a_link_outside_the_matched_section_takes_no_hop_gift(sections: Vault) -> None:
    # the question is answered in Batteries' "Charging" section; its "Related" list links
    # Cell chemistry in a line that shares "lithium cell" with the question
    anywhere = local_search(sections, DEEP, local=False)
    assert next(iter(anywhere)) == "energy/Batteries.md"
    chemistry = anywhere["energy/Cell chemistry.md"].explain
    assert chemistry and chemistry.graph_from == "energy/Batteries.md"
    local = local_search(sections, DEEP, local=True)
    assert next(iter(local)) == "energy/Batteries.md"
    kept = local["energy/Cell chemistry.md"].explain
    assert kept and kept.graph_added < chemistry.graph_added / 3
    assert list(local).index("energy/Cell chemistry.md") >= list(anywhere).index(
        "energy/Cell chemistry.md"
    )


def test_a_link_inside_the_matched_section_keeps_its_hop_gift(sections: Vault) -> None:
    # "How fast it grows is measured in [[Capacity fade]]" stands in the matched section
    for local in (False, True):
        hits = local_search(sections, GROWTH, local)
        assert next(iter(hits)) == "energy/Batteries.md"
        fade = hits["energy/Capacity fade.md"].explain
        assert fade and fade.graph_from == "energy/Batteries.md"
        assert list(hits).index("energy/Capacity fade.md") == 1


def test_the_shipped_ranking_carries_the_linked_answer_in(vault: Vault, sections: Vault) -> None:
    # the default settings, no override: the answer behind Falcon's link comes in under
    # Falcon (with the gift off it is not in the top 3), and the related-list link of a
    # question answered deep in Batteries takes no hop gift
    hits = vault.search(TRAVEL, mode="hybrid", top_k=10, explain=True)
    paths = [h.path for h in hits]
    assert paths[0] == "projects/Falcon.md" and ANSWER in paths[:3], paths
    answer = hits[paths.index(ANSWER)].explain
    assert answer and answer.graph_from == "projects/Falcon.md"
    assert all(h.explain and h.explain.total == pytest.approx(h.score, abs=1e-12) for h in hits)
    deep = {h.path: h for h in sections.search(DEEP, mode="hybrid", top_k=10, explain=True)}
    anywhere = local_search(sections, DEEP, local=False)["energy/Cell chemistry.md"].explain
    shipped = deep["energy/Cell chemistry.md"].explain
    assert anywhere and shipped and shipped.graph_added < anywhere.graph_added / 3


def test_anchor_gifts_read_the_explains_of_the_givers_and_the_linked_notes_alone() -> None:
    """Fusion makes a candidate's explain when it is read; the gifts read the top notes'
    and, to keep a gift below its giver, the linked notes' (a hub note's neighbours put
    hundreds of candidates in a ranking)."""
    from vaultsearch.models import BranchPart, Explain
    from vaultsearch.search.filters import NoteMeta
    from vaultsearch.search.hops import anchor_gifts
    from vaultsearch.search.ranking import Candidate

    read: list[int] = []

    class Counted(Candidate):
        __slots__ = ()

        @property
        def explain(self) -> Explain:
            read.append(self.note_id)
            return Explain("convex", (BranchPart("semantic", self.note_id, 1, 1.0, 1.0, 1.0, 0.5),))

    class View:
        def __init__(self) -> None:
            self.notes = {n: NoteMeta(n, f"n{n}.md", f"N{n}", (), {}, 0.0) for n in range(1, 51)}
            self.note_by_path = {f"n{n}.md": n for n in range(1, 51)}
            self.note_of_chunk: dict[int, int] = {}

        def first_chunks(self, note_id: int) -> list[int]:
            return [note_id]

    ranked = [Counted(n, [n], 1.0 - n / 100) for n in range(1, 51)]
    settings = FusionSettings(hop_weight=3.0, hop_top=1, hop_below=True)
    gifts = anchor_gifts(
        ranked,
        View(),
        lambda nid: [("n7.md", "the cipher is here", 3)] if nid == 1 else [],
        str.lower,
        {"cipher": 1.0},
        settings,
    )
    assert set(gifts) == {7}
    assert set(read) == {1, 7}
