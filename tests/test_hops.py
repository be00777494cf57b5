"""The hop gift on a small real vault: the answer to a question asked through a note is
only reachable through that note's link, and reads like the answer; another link of
the same note does not."""

from __future__ import annotations

import pytest

from tests.conftest import write_files
from vaultsearch import Vault
from vaultsearch.models import Hit
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


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Vault:
    root = write_files(tmp_path_factory.mktemp("hops") / "vault", FILES)
    v = Vault.open(root)
    v.index()
    return v


def search(vault: Vault, weight: float, mode: str = "hybrid") -> list[Hit]:
    config = vault.config.with_search(hop_weight=weight, hop_top=1, hop_margin=0.0)
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
