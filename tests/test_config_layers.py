"""Settings from five places: defaults < config file < .env < environment < --set."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vaultsearch.app.reload import reload_config
from vaultsearch.app.vault import Vault
from vaultsearch.config import explain_config, load_config
from vaultsearch.config_layers import read_dotenv
from vaultsearch.errors import ConfigError


@pytest.fixture()
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / ".vaultsearch").mkdir(parents=True)
    (root / "a.md").write_text("# A\n\nalpha\n")
    (root / ".vaultsearch" / "config.toml").write_text(
        "[search]\nrrf_k = 30\ncandidates = 110\ngraph_top = 11\nkeyword_weight = 0.31\n"
    )
    (root / ".vaultsearch" / ".env").write_text(
        "# settings for the MCP server\n"
        "export VAULTSEARCH_SEARCH_CANDIDATES=150\n"
        "VAULTSEARCH_SEARCH_GRAPH_TOP='12'\n"
        'VAULTSEARCH_SEARCH_KEYWORD_WEIGHT="0.32"\n'
    )
    return root


def test_each_of_five_places_wins_over_the_one_below(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTSEARCH_SEARCH_GRAPH_TOP", "13")
    monkeypatch.setenv("VAULTSEARCH_SEARCH_KEYWORD_WEIGHT", "0.33")
    cfg, origins = explain_config(None, vault, ("search.keyword_weight=0.34",))
    s = cfg.search
    assert (s.rrf_k, s.candidates, s.graph_top, s.keyword_weight) == (30, 150, 13, 0.34)
    assert s.rerank_top == 30  # a default
    assert origins["search.rrf_k"].endswith("config.toml")
    assert origins["search.candidates"].endswith(".env")
    assert origins["search.graph_top"] == "environment"
    assert origins["search.keyword_weight"] == "--set flag"
    assert "search.rerank_top" not in origins


def test_the_cli_prints_each_value_and_where_it_came_from(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"VAULTSEARCH_SEARCH_GRAPH_TOP": "13", "PATH": "/usr/bin:/bin"}
    flags = ["--set", "search.keyword_weight=0.34"]
    done = subprocess.run(
        [sys.executable, "-m", "vaultsearch.cli", "config", str(vault), "--json", *flags],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")},
        check=True,
    )
    rows = {r["key"]: r for r in json.loads(done.stdout)}
    assert rows["search.rrf_k"]["from"].endswith("config.toml")
    assert rows["search.candidates"]["from"].endswith(".env: VAULTSEARCH_SEARCH_CANDIDATES")
    assert rows["search.graph_top"] == {
        "key": "search.graph_top",
        "value": 13,
        "from": "environment: VAULTSEARCH_SEARCH_GRAPH_TOP",
    }
    assert rows["search.keyword_weight"]["value"] == 0.34
    assert rows["search.rerank_top"]["from"] == "default"


def test_values_are_typed_by_the_key(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTSEARCH_KEYWORD_STEMMING", "off")
    monkeypatch.setenv("VAULTSEARCH_VAULT_EXCLUDE", "drafts/, archive/**")
    monkeypatch.setenv("VAULTSEARCH_SEARCH_RECENCY_TIERS", "[[3, 1.5]]")
    cfg = load_config(None, vault)
    assert cfg.keyword.stemming is False
    assert cfg.vault.exclude == ["drafts/", "archive/**"]
    assert cfg.search.recency_tiers == [[3, 1.5]]


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        (
            "VAULTSEARCH_SEARCH_KEYWORD_WIEGHT",
            "1",
            "Did you mean VAULTSEARCH_SEARCH_KEYWORD_WEIGHT",
        ),
        ("VAULTSEARCH_SEARCH_CANDIDATES", "many", "expected an integer"),
        ("VAULTSEARCH_WATCH_ENABLED", "perhaps", "expected true or false"),
        ("VAULTSEARCH_SEARCH_RECENCY_TIERS", "[[3,", r"expected a TOML \[\.\.\.\] value"),
        ("VAULTSEARCH_SEARCH_FUSION", "median", "search.fusion"),
        ("VAULTSEARCH_INDEX_FIRST_BATCH", "0", r"'index\.first_batch' = 0 is invalid: .* files"),
        ("VAULTSEARCH_INDEX_PUBLISH_SECONDS", "0", r"'index\.publish_seconds' = 0\.0 is inv"),
        ("VAULTSEARCH_INDEX_FILL_NOTES", "-3", r"'index\.fill_notes' = -3 is invalid: .* notes"),
    ],
)
def test_a_wrong_variable_is_one_sentence_naming_it(
    vault: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str, says: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=says):
        load_config(None, vault)


def test_variables_of_other_settings_are_left_alone(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTSEARCH_MCP_TOKEN", "secret")
    monkeypatch.setenv("VAULTSEARCH_CONSOLES_DIR", "/tmp/x")
    assert load_config(None, vault).search.rrf_k == 30


def test_a_flag_naming_no_key_is_refused_with_the_closest(vault: Path) -> None:
    with pytest.raises(ConfigError, match=r"Did you mean search\.rrf_k"):
        load_config(None, vault, ("search.rrf_kk=3",))
    with pytest.raises(ConfigError, match="is not KEY=VALUE"):
        load_config(None, vault, ("search.rrf_k",))


def test_a_misspelt_file_key_suggests_the_real_one(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[search]\nkeyword_wieght = 0.5\n")
    with pytest.raises(ConfigError, match=r"Did you mean 'search\.keyword_weight'"):
        load_config(path)


def test_dotenv_lines(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("A=1\n\n# c\nexport B = 'two words'\nC=x # note\nD=\"#not a comment\"\n")
    assert read_dotenv(path) == {"A": "1", "B": "two words", "C": "x", "D": "#not a comment"}
    path.write_text("JUSTANAME\n")
    with pytest.raises(ConfigError, match=r"Line 1 .* is not NAME=value"):
        read_dotenv(path)


def test_a_vault_keeps_its_flags_and_the_environment_across_a_reload(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTSEARCH_SEARCH_GRAPH_TOP", "13")
    v = Vault.open(vault, flags=("search.rrf_k=7",))
    assert (v.config.search.rrf_k, v.config.search.graph_top) == (7, 13)
    (vault / ".vaultsearch" / "config.toml").write_text("[search]\nrrf_k = 31\ncandidates = 90\n")
    result = reload_config(v)
    assert result.error is None
    assert v.config.search.rrf_k == 7  # the flag still wins
    assert v.config.search.candidates == 150  # .env over the file
    assert v.config.search.graph_top == 13
