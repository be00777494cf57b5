"""The CLI as a newcomer meets it: one clear sentence and a fix, no traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_files
from vaultsearch import __version__
from vaultsearch.cli.main import main
from vaultsearch.embedding.locate import RUNTIME_MODEL_DIR

NOTES: dict[str, str | bytes] = {
    "a.md": "---\ntags: [demo]\n---\n# Alpha\n\nAlpha talks about rivers. See [[b]].\n",
    "b.md": "# Beta\n\nBeta talks about mountains.\n",
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def vault(tmp_path: Path, embedder: object) -> Path:
    return write_files(tmp_path / "vault", NOTES)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"vaultsearch {__version__}"


def test_index_status_search_json(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "index", str(vault), "--json")
    assert code == 0 and json.loads(out)["added"] == 2
    code, out, _ = run(capsys, "status", str(vault), "--json")
    status = json.loads(out)
    assert code == 0 and status["notes"] == 2 and status["vectors"] == status["chunks"]
    assert status["failed"] == {}
    code, out, _ = run(capsys, "search", "rivers", "--vault", str(vault), "--json")
    hits = json.loads(out)
    assert code == 0 and hits[0]["path"] == "a.md"
    assert set(hits[0]) >= {"path", "heading_path", "start_line", "end_line", "snippet", "score"}
    code, out, err = run(
        capsys, "search", "rivers", "--vault", str(vault), "--tag", "dmeo", "--json"
    )
    assert code == 2 and out == ""  # a tag no note has is said, not answered with []
    assert "No indexed file has the tag 'dmeo' (did you mean 'demo'?); tags in this vault" in err
    assert "'vaultsearch tags'" in err and "Traceback" not in err
    code, out, err = run(capsys, "search", "rivers", "--vault", str(vault), "--where", "stauts=x")
    assert code == 2 and "frontmatter field(s) 'stauts'; fields in this vault: tags." in err


def test_check_reports_field_and_incremental(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "index", str(vault), "--quiet")[0] == 0
    code, out, _ = run(capsys, "index", str(vault), "--check")
    assert code == 0 and "current" in out

    (vault / "c.md").write_text("# Gamma\n")
    code, out, _ = run(capsys, "index", str(vault), "--check", "--json")
    report = json.loads(out)
    assert code == 1 and report["status"] == "update" and report["reasons"] == ["1 file new"]

    config = vault.parent / "other.toml"
    config.write_text("[chunking]\nsize = 500\n")
    code, out, _ = run(capsys, "index", str(vault), "--check", "--config", str(config))
    assert code == 1 and "rebuild needed" in out and "chunking.size: 1000 -> 500" in out

    config.write_text(f'[embedding]\nmodel = "{vault.parent / "model-copy"}"\n')
    shutil.copytree(RUNTIME_MODEL_DIR, vault.parent / "model-copy")
    code, out, _ = run(capsys, "index", str(vault), "--check", "--config", str(config))
    assert code == 1 and "embedding.model" in out


def test_no_index_yet(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "search", "x", "--vault", str(vault))
    assert code == 2
    assert "No index has been built" in err and f"fix: vaultsearch index '{vault}'" in err
    assert "Traceback" not in err


def test_vault_path_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "index", str(tmp_path / "missing"))
    assert code == 2 and "does not exist" in err and "fix:" in err


def test_model_path_wrong(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = vault.parent / "bad.toml"
    config.write_text('[embedding]\nmodel = "/no/such/model"\n')
    code, _, err = run(capsys, "index", str(vault), "--config", str(config))
    assert code == 2
    assert "'/no/such/model' does not exist" in err and "embedding.model" in err


def test_index_built_by_another_model(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "index", str(vault), "--quiet")[0] == 0
    shutil.copytree(RUNTIME_MODEL_DIR, vault.parent / "model-copy")
    config = vault.parent / "other.toml"
    config.write_text(f'[embedding]\nmodel = "{vault.parent / "model-copy"}"\n')
    code, _, err = run(capsys, "search", "rivers", "--vault", str(vault), "--config", str(config))
    assert (
        code == 2
        and "built with the embedding model" in err
        and "fix: run 'vaultsearch index'" in err
    )
    code, out, _ = run(
        capsys,
        "search",
        "rivers",
        "--vault",
        str(vault),
        "--config",
        str(config),
        "--mode",
        "keyword",
        "--json",
    )
    assert code == 0 and json.loads(out)[0]["path"] == "a.md"


def test_bad_config_value_names_key(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = vault.parent / "bad.toml"
    config.write_text("[search]\nrrf_k = -1\n")
    code, _, err = run(capsys, "index", str(vault), "--config", str(config))
    assert code == 2 and "search.rrf_k" in err and "-1" in err


def test_permission_denied(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "index", str(vault), "--index-dir", "/sys/vaultsearch-test-index")
    assert code == 2 and "Permission denied" in err and "--index-dir" in err
    assert "Traceback" not in err


def test_disk_full(vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(small)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("mounting a small tmpfs needs root: " + mounted.stderr.decode().strip())
    try:
        code, _, err = run(
            capsys, "index", str(vault), "--index-dir", str(small / "index"), "--quiet"
        )
        assert code == 2 and "The disk is full" in err and "Traceback" not in err
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)


def test_init_writes_commented_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "init", str(tmp_path))
    target = tmp_path / ".vaultsearch" / "config.toml"
    assert (
        code == 0 and str(target) in out and target.is_file() and "[search]" in target.read_text()
    )
    code, _, err = run(capsys, "init", str(tmp_path))
    assert code == 2 and "already exists" in err and "--force" in err


def test_committed_manifest_matches_code() -> None:
    """CI keys its index cache on this file: it must say what the code would build."""
    from vaultsearch.config import load_config
    from vaultsearch.store.manifest import expected_manifest

    root = Path(__file__).resolve().parent.parent
    committed = json.loads((root / "index" / "index.manifest.json").read_text())
    expected = expected_manifest(load_config(root / "config.toml.example"))
    assert committed == expected, "index/index.manifest.json is stale; fix: make index"


def test_example_config_is_the_defaults() -> None:
    import tomllib
    from dataclasses import replace

    from vaultsearch.config import Config, config_from_dict, template_text

    root = Path(__file__).resolve().parent.parent
    assert (root / "config.toml.example").read_text() == template_text()
    parsed = config_from_dict(tomllib.loads(template_text()))
    assert replace(parsed, source="") == replace(Config(), source="")


# --- habits: the vault either way, the closest name, a readable explain ----------------
def test_vault_as_positional_or_flag_on_every_command(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "index", "--vault", str(vault), "--quiet")[0] == 0
    code, out, _ = run(capsys, "status", "--vault", str(vault), "--json")
    assert code == 0 and json.loads(out)["notes"] == 2
    assert run(capsys, "check", str(vault), "--vault", str(vault), "--json")[0] == 0
    with pytest.raises(SystemExit) as done:
        main(["status", str(vault), "--vault", str(vault / "elsewhere")])
    assert done.value.code == 2
    assert "two vaults given" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["serch", "x"], "did you mean 'search'?"),
        (
            ["search", "x", "--tpo-k", "3"],
            "--tpo-k is not an option of 'vaultsearch search'; did you mean --top-k?",
        ),
        (["search", "x", "--mode", "hybird"], "did you mean 'hybrid'?"),
        (["search", "callouts", "help"], "quote a query of several words"),
        (["status", "--jsno"], "did you mean --json?"),
    ],
)
def test_a_wrong_word_names_the_closest_real_one(
    capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    assert says in capsys.readouterr().err


def test_explain_on_a_terminal_is_a_table_that_adds_up(vault: Path) -> None:
    from vaultsearch.app.vault import Vault
    from vaultsearch.cli.main import explain_table

    v = Vault.open(vault)
    v.index()
    hit = v.search("rivers", explain=True)[0]
    assert hit.explain is not None
    table = explain_table(hit.explain)
    lines = table.splitlines()
    assert lines[0].split() == ["branch", "rank", "raw", "normalised", "weight", "adds"]
    adds = [float(line.split()[-1]) for line in lines[1:] if not line.strip().startswith("=")]
    assert sum(adds) == pytest.approx(hit.score, abs=1e-3)
    assert lines[-1].split()[-1] == f"{hit.score:.4f}"


def test_commands_called_in_process_leave_nothing_open(vault: Path) -> None:
    """Code that calls ``main`` many times in one process (a test battery, a notebook)
    must not gather a catalog connection, index files and a reader lock per call: past
    1,024 descriptors the parse box's waits failed and a repair indexed nothing. Counted
    in a process of its own: in a test worker, earlier tests' garbage closes descriptors
    whenever the collector runs."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc/self/fd")
    commands = [
        ["index", str(vault)],
        ["status", str(vault)],
        ["search", "rivers", "--vault", str(vault)],
        ["get", "a.md", "--vault", str(vault)],
        ["related", "a.md", "--vault", str(vault)],
        ["list", "--vault", str(vault)],
        ["check", str(vault)],
    ]
    script = """
import contextlib, io, json, os, sys
from vaultsearch.cli.main import main
commands = json.loads(sys.argv[1])
def quiet(argv):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)
for argv in commands:  # the first round loads the model and its threads, once
    assert quiet(argv) == 0, argv
before = len(os.listdir("/proc/self/fd"))
for _ in range(3):
    for argv in commands:
        assert quiet(argv) == 0, argv
print(json.dumps([before, len(os.listdir("/proc/self/fd"))]))
"""
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(commands)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    before, after = json.loads(done.stdout.strip().splitlines()[-1])
    assert after == before
