"""Config as section.key pairs, which keys force a rebuild, and reloading in place."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.conftest import WriteVault
from vaultsearch.app.reload import (
    changed_keys,
    flat_config,
    merge_for_running,
    rebuild_keys,
    reload_config,
)
from vaultsearch.app.vault import Vault
from vaultsearch.config import Config
from vaultsearch.store.manifest import expected_manifest, is_recorded


def _other(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 0.5
    if isinstance(value, list):
        return [*value, value[0] if value else "x"]
    return {"convex": "rrf", "tm2c2": "minmax", "markdown": "text"}.get(value, value + "x")


def _with(config: Config, key: str, value: Any) -> Config:
    section, name = key.split(".", 1)
    if section == "parsers":
        return replace(config, parsers={**config.parsers, name: value})
    return replace(config, **{section: replace(getattr(config, section), **{name: value})})


def test_flat_config_names_every_setting() -> None:
    flat = flat_config(Config())
    assert flat["search.fusion"] == "convex" and flat["chunking.size"] == 1000
    assert flat["parsers.**/*.md"] == "markdown"
    assert "source" not in flat


@pytest.mark.parametrize(
    "key", [k for k in flat_config(Config()) if not k.startswith("embedding.")]
)
def test_a_key_forces_a_rebuild_exactly_when_the_manifest_records_it(key: str) -> None:
    """Checked against expected_manifest itself, so the list cannot drift from it."""
    base = Config()
    changed = _with(base, key, _other(flat_config(base)[key]))
    differs = expected_manifest(changed, 384) != expected_manifest(base, 384)
    assert differs == is_recorded(key), key


def test_rebuild_keys_are_those_of_the_config() -> None:
    keys = rebuild_keys(Config())
    assert {"chunking.size", "keyword.stemming", "embedding.model", "parsers.**/*.md"} <= set(keys)
    assert not {"search.fusion", "keyword.title_boost", "watch.enabled"} & set(keys)


def test_settings_a_running_process_is_built_from_wait_for_a_restart() -> None:
    old = Config()
    new = _with(
        _with(_with(old, "embedding.batch_size", 4), "search.rrf_k", 10), "watch.enabled", False
    )
    new = _with(new, "vault.index_dir", "elsewhere")
    assert changed_keys(old, new) == [
        "embedding.batch_size", "search.rrf_k", "vault.index_dir", "watch.enabled",
    ]  # fmt: skip
    merged = merge_for_running(old, new)
    assert changed_keys(old, merged) == ["search.rrf_k"]


def test_reload_applies_reports_and_refuses(write_vault: WriteVault) -> None:
    root = write_vault({"a.md": "# A\n\nalpha\n"})
    with Vault.open(root) as vault:
        assert reload_config(vault).message() == "No setting changed in built-in defaults."
        config = root / ".vaultsearch" / "config.toml"
        config.parent.mkdir()
        config.write_text(
            "[search]\nrrf_k = 10\n[chunking]\nsize = 500\n[watch]\nenabled = false\n"
        )
        result = reload_config(vault)
        assert result.source == str(config) and result.error is None
        assert result.applied == ("chunking.size", "search.rrf_k")
        assert result.rebuild == ("chunking.size",) and result.restart == ("watch.enabled",)
        assert vault.config.search.rrf_k == 10 and vault.manager().config.chunking.size == 500
        assert vault.config.watch.enabled is True
        assert vault.check().status == "rebuild"  # the next update rebuilds

        config.write_text("[search]\nrrf_k = 0\n")
        refused = reload_config(vault)
        assert refused.error and "search.rrf_k" in refused.error
        assert refused.message().startswith("Kept the running config: ")
        assert vault.config.search.rrf_k == 10  # unchanged

        config.write_text("[search\n")
        assert "not valid TOML" in (reload_config(vault).error or "")
        assert vault.config.search.rrf_k == 10


def test_a_run_in_progress_keeps_its_settings(write_vault: WriteVault, embedder: object) -> None:
    root = write_vault({f"n{i}.md": f"# N{i}\n\n" + "word " * 400 for i in range(3)})
    with Vault.open(root) as vault:
        runner = vault.runner()
        sizes: list[int] = []

        def during(event: str, snap: object) -> None:
            if event == "started":
                vault.use_config(_with(vault.config, "chunking.size", 300))
                sizes.append(vault.manager().config.chunking.size)

        unsubscribe = runner.subscribe(during)
        runner.run("update")
        unsubscribe()
        assert sizes == [1000]  # not during the run
        assert vault.manager().config.chunking.size == 300  # but right after it
        assert vault.check().status == "rebuild"


def test_the_answer_endpoint_must_be_a_url() -> None:
    from vaultsearch.config import config_from_dict
    from vaultsearch.errors import ConfigError

    with pytest.raises(ConfigError, match=r"answer.endpoint.*http:// or https:// URL"):
        config_from_dict({"answer": {"endpoint": "127.0.0.1:8080"}})
    ok = config_from_dict({"answer": {"endpoint": "http://127.0.0.1:8080/v1", "timeout": 5}})
    assert ok.answer.timeout == 5.0 and "answer.endpoint" not in rebuild_keys(ok)
