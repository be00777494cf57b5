"""A parse stopped at ``index.parse_timeout`` is the file's fault only if it used the time.

The deadline counts wall-clock time. On a loaded laptop a large but legitimate note or
PDF could pass it while its parser waited for a core, using a fraction of it in CPU; it
was recorded as the file's failure, never read again until it changed, and ``check``
called that consistent. The parse box now knows the CPU the child spent on the file
(``parsebox.py``), and ``fault.of_timeout`` makes a timeout with less than half of it
ours: read again by the next run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import WriteVault, live_catalog
from tests.parsebox_stall import STALL_ENV
from vaultsearch import fault
from vaultsearch.app.vault import Vault
from vaultsearch.fault import FILE, OURS
from vaultsearch.indexing import parsebox

NOTES = {
    "a.md": "# Alpha\n\nAlder trees by the alpine lake.\n",
    "b.md": "# Beta\n\nBirches on the bank of the river.\n",
}
Stall = Callable[[dict[str, str]], None]


@pytest.fixture
def stall(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Stall:
    """The parse box's children are ``tests/parsebox_stall.py``: the returned function
    says which notes their parser sleeps or spins on from then on."""
    plan = tmp_path / "stall.json"
    plan.write_text("{}")
    monkeypatch.setenv(STALL_ENV, str(plan))
    real = parsebox.child_command
    monkeypatch.setattr(
        parsebox, "child_command", lambda _, *args: real("tests.parsebox_stall", *args)
    )
    return lambda how: plan.write_text(json.dumps(how))


def _with_timeout(root: Path, seconds: float) -> None:
    (root / ".vaultsearch").mkdir()
    (root / ".vaultsearch" / "config.toml").write_text(f"[index]\nparse_timeout = {seconds}\n")


def _faults(index_dir: Path) -> dict[str, str]:
    catalog = live_catalog(index_dir)
    try:
        return {path: row.fault for path, row in catalog.failures().items()}
    finally:
        catalog.close()


BUSY = re.compile(
    r"parsing took longer than index\.parse_timeout \((\d+) s\) while the machine was busy "
    r"\(the parser used (\d+\.\d) s of CPU\); skipped\.$"
)


def test_a_parse_stopped_while_it_waited_is_ours_and_read_again(
    write_vault: WriteVault, embedder: object, stall: Stall
) -> None:
    """The parser sleeps, using no CPU, as one does that a busy machine gives no core.
    A busier machine only lowers the CPU it uses, so no load can make this one the
    file's; the 1 s deadline is passed by the sleep whatever the load."""
    root = write_vault(NOTES)
    _with_timeout(root, 1)
    stall({"a.md": "sleep"})
    with Vault.open(root) as vault:
        first = vault.index()
        assert set(first.failed) == {"a.md"} and first.to_retry == {"a.md": 1}
        busy = BUSY.match(first.failed["a.md"])
        assert busy is not None, first.failed["a.md"]
        assert busy[1] == "1" and float(busy[2]) < 0.5
        assert _faults(vault.index_dir) == {"a.md": OURS}
        assert vault.status()["to_retry"] == {"a.md": 1}
        assert vault.check().status == "update"

        stall({})  # the machine has a core for it again
        again = vault.index()
        assert again.failed == {} and again.added == 1
        assert _faults(vault.index_dir) == {}
        assert [h.path for h in vault.search("alder", mode="keyword")] == ["a.md"]
        assert vault.verify().ok and vault.check().status == "current"


def test_a_parse_that_used_its_time_stays_the_files_fault(
    write_vault: WriteVault, embedder: object, stall: Stall
) -> None:
    """One run stops two parses at the deadline: one spinning, one asleep; only the
    sleeper is read again. The spinner burns two cores (``parsebox_stall._spin``) for
    2 s, so it stays under half the timeout in CPU only if the machine gives it less
    than a quarter of each core; where a machine is that loaded its failure being ours
    is the rule's intent, and the 2 s keep the child's start-up out of the balance."""
    root = write_vault({**NOTES, "spin.md": "# Spin\n\nA note that never ends.\n"})
    _with_timeout(root, 2)
    stall({"a.md": "sleep", "spin.md": "spin"})
    with Vault.open(root) as vault:
        first = vault.index()
        assert set(first.failed) == {"a.md", "spin.md"} and first.to_retry == {"a.md": 1}
        assert first.failed["spin.md"] == (
            "parsing took longer than index.parse_timeout (2 s) allows; skipped."
        )
        assert BUSY.match(first.failed["a.md"]) is not None
        assert _faults(vault.index_dir) == {"a.md": OURS, "spin.md": FILE}

        stall({"spin.md": "spin"})  # still spins, were it read again
        again = vault.index()
        assert again.failed == {} and again.added == 1  # a.md, and spin.md not read
        assert _faults(vault.index_dir) == {"spin.md": FILE}
        assert vault.check().status == "current"


@pytest.mark.parametrize(
    ("cpu", "whose", "reason"),
    [
        (
            14.2,
            OURS,
            "parsing took longer than index.parse_timeout (120 s) while the machine was "
            "busy (the parser used 14 s of CPU); skipped.",
        ),
        (0.04, OURS, "(the parser used 0.0 s of CPU)"),
        (59.9, OURS, "while the machine was busy"),
        (60.0, FILE, "parsing took longer than index.parse_timeout (120 s) allows; skipped."),
        (None, FILE, "parsing took longer than index.parse_timeout (120 s) allows; skipped."),
    ],
)
def test_a_timeout_is_ours_below_half_the_timeout_in_cpu(
    cpu: float | None, whose: str, reason: str
) -> None:
    """Half: a parse over its budget uses a core the whole time, so even one that got
    half a core stays the file's; a CPU that could not be known keeps it the file's."""
    failure = fault.of_timeout(cpu, 120)
    assert failure.fault == whose and reason in failure.reason
