"""Battery: bounded parsing and bounded templates (issue 22, failures 5 and 9).

1. PDF bombs, each in its own vault beside normal notes, indexed by the real CLI
   (`vaultsearch index`, the parse box in its child process): small files whose pages
   share one huge content stream, and one that asks for memory instead. Each must be
   skipped with a reason naming what it ran into (or, where pages share everything,
   read once), the normal notes indexed, and the run take about its budget at most.
2. Template bombs through a real `vaultsearch mcp` stdio session (`create_rag_report`
   with a vault template): each refused in one sentence; the same server then answers
   a ping, writes a normal report and searches, and its log holds no traceback.

    python bench/attack_parse_budget.py          # a few minutes; prints the table
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))
os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from tests.hostile_files import NORMAL_WORDS, catalog_view, write_normal_notes  # noqa: E402
from tests.pdfs import operator_pdf, shared_stream_pdf  # noqa: E402

PARSE_TIMEOUT = 30
"""The battery's index.parse_timeout: the default (120 s) would only make it slower."""

PdfCase = tuple[str, Callable[[], bytes], dict[str, Any], str, str]
PDF_CASES: list[PdfCase] = [
    (
        "issue 22: 17 KB, 100 pages share a 70 MB stream of text operators",
        lambda: shared_stream_pdf(100, 70, filler=b"(x) Tj\n"),
        {},
        "skipped at a pypdf limit, or at index.parse_timeout",
        "parsing limit on page 1|index.parse_timeout",
    ),
    (
        "15 KB, 100 pages share a 70 MB blank stream and their resources",
        lambda: shared_stream_pdf(100, 70),
        {},
        "indexed (the shared page read once), or skipped at index.parse_timeout",
        "|index.parse_timeout",
    ),
    (
        "27 KB, 100 pages share a 70 MB blank stream, each its own resources",
        lambda: shared_stream_pdf(100, 70, own_resources=True),
        {},
        f"skipped at index.parse_timeout ({PARSE_TIMEOUT} s)",
        "index.parse_timeout",
    ),
    (
        "44 KB, 10 pages share a 300 MB blank stream",
        lambda: shared_stream_pdf(10, 300),
        {},
        "skipped at the decoding limit",
        "parsing limit on page 1",
    ),
    (
        "3 pages share a 15 MB stream of 1M TJ arrays, parse_memory_mb = 64",
        lambda: operator_pdf(3, 15),
        {"parse_memory_mb": 64},
        "skipped at index.parse_memory_mb (64 MB)",
        "index.parse_memory_mb (64 MB)",
    ),
    (
        "100 pages share a 70 MB blank stream, parse_memory_mb = 64",
        lambda: shared_stream_pdf(100, 70),
        {"parse_memory_mb": 64},
        "skipped: a stream may decode to 16 MB",
        "index.parse_memory_mb (64 MB)",
    ),
]

TEMPLATE_CASES: list[tuple[str, str, str]] = [
    (
        "nested range(100000) loops",
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "reports.render_timeout",
    ),
    (
        "a string doubled 40 times",
        '{% set ns = namespace(s="ab") %}{% for i in range(40) %}'
        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
        "needed more than 256 MB",
    ),
    ("2 ** (10 ** 10)", "{{ 2 ** (10 ** 10) }}", "256 MB|reports.render_timeout"),
    ('"a" * 10 ** 10', '{{ "a" * 10 ** 10 }}', "256 MB|reports.render_timeout"),
    ('"a" | center(10 ** 9)', '{{ "a" | center(10 ** 9) }}', "256 MB|max_output_bytes"),
    (
        "a macro that calls itself",
        "{% macro down(n) %}{{ down(n + 1) }}{% endmacro %}{{ down(0) }}",
        "calls itself without end",
    ),
    ("a template including itself", '{% include "self.md.j2" %}', "calls itself without end"),
    (
        "100,000 lines of output",
        '{% for i in range(100000) %}{{ "x" * 100 }}\n{% endfor %}',
        "reports.max_output_bytes",
    ),
    ("include ../../secret.md", '{% include "../../secret.md" %}', "cannot include"),
    ("import /etc/passwd", '{% import "/etc/passwd" as p %}{{ p }}', "cannot include"),
    ("extends a shipped template", '{% extends "basic.md.j2" %}', "cannot include"),
    ("include a link out of the folder", '{% include "link.md.j2" %}', "cannot include"),
    ("Python internals", "{{ title.__class__.__mro__[1].__subclasses__() }}", "not allowed"),
]


def _index(root: Path, index_dir: Path) -> tuple[float, str]:
    cmd = [sys.executable, "-m", "vaultsearch.cli", "index", str(root)]
    t0 = time.perf_counter()
    done = subprocess.run(
        [*cmd, "--index-dir", str(index_dir)], capture_output=True, text=True, timeout=3600
    )
    return time.perf_counter() - t0, done.stderr[-300:] if done.returncode else ""


def pdf_rows(tmp: Path) -> list[dict[str, Any]]:
    rows = []
    for n, (case, make, budget, expected, wanted) in enumerate(PDF_CASES):
        root, index_dir = tmp / f"pdf{n}" / "vault", tmp / f"pdf{n}" / "index"
        (root / ".vaultsearch").mkdir(parents=True)
        write_normal_notes(root)
        data = make()
        (root / "bomb.pdf").write_bytes(data)
        settings = {"parse_timeout": PARSE_TIMEOUT, **budget}
        lines = [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
        (root / ".vaultsearch" / "config.toml").write_text("[index]\n" + "\n".join(lines) + "\n")
        seconds, error = _index(root, index_dir)
        notes, failures = catalog_view(index_dir) if not error else (set(), {})
        normal = set(NORMAL_WORDS.values()) <= notes
        reason = failures.get("bomb.pdf")
        accepted = wanted.split("|")
        if error:
            observed, ok = f"index failed: {error}", False
        elif reason is None:
            observed = f"indexed: {'bomb.pdf' in notes}; index run {seconds:.1f} s"
            ok = "" in accepted and "bomb.pdf" in notes and normal
        else:
            observed = f"skipped; index run {seconds:.1f} s: {reason}"
            ok = any(w and w in reason for w in accepted) and normal
        if not normal:
            observed += "; normal notes missing"
        rows.append(
            {
                "surface": "vaultsearch index (PDF)",
                "case": f"{case} ({len(data):,} bytes)",
                "expected": f"{expected}; normal notes indexed",
                "observed": observed,
                "ok": ok,
            }
        )
    return rows


def template_rows(tmp: Path) -> list[dict[str, Any]]:
    from tests.rawmcp import RawSession

    from vaultsearch import Vault

    root, index_dir = tmp / "templates" / "vault", tmp / "templates" / "index"
    folder = root / ".vaultsearch" / "templates"
    folder.mkdir(parents=True)
    write_normal_notes(root)
    (tmp / "templates" / "secret.md").write_text("outside the vault\n")
    (folder / "link.md.j2").symlink_to(tmp / "templates" / "secret.md")
    for n, (_, body, _) in enumerate(TEMPLATE_CASES):
        (folder / f"t{n}.md.j2").write_text(body.replace("self.md.j2", f"t{n}.md.j2"))
    Vault.open(root, index_dir=index_dir).index()

    rows = []
    session = RawSession(root, index_dir, "--allow-writes", timeout=600, memory_mb=8192)
    try:
        for n, (case, _, wanted) in enumerate(TEMPLATE_CASES):
            t0 = time.perf_counter()
            failed, text = session.call(
                "create_rag_report", {"template": f"t{n}", "variables": {"title": "x"}}
            )
            seconds = time.perf_counter() - t0
            pong = session.request("ping").get("result") == {}
            one = "\n" not in text.strip() and "Traceback" not in text
            rows.append(
                {
                    "surface": "stdio MCP create_rag_report",
                    "case": case,
                    "expected": "refused in one sentence; ping answered",
                    "observed": f"{'refused' if failed else 'WRITTEN'} in {seconds:.1f} s: "
                    + re.sub(r"^Template 't\d+' \(\S+\) ", "", text)[:120],
                    "ok": failed and one and pong and any(w in text for w in wanted.split("|")),
                }
            )
        failed, text = session.call(
            "create_rag_report", {"variables": {"title": "After", "answer": "Plums."}}
        )
        found, hits = session.call("search", {"query": "plums", "mode": "keyword"})
        after_ok = not failed and not found and "alpha.md" in hits
    finally:
        log = session.close()
    rows.append(
        {
            "surface": "stdio MCP",
            "case": f"the same server after {len(TEMPLATE_CASES)} template bombs",
            "expected": "writes a normal report, searches; no traceback in its log",
            "observed": f"report {'written' if after_ok else 'FAILED'}; "
            f"tracebacks in log: {log.count('Traceback')}",
            "ok": after_ok and "Traceback" not in log,
        }
    )
    return rows


def run(tmp: Path) -> list[dict[str, Any]]:
    return pdf_rows(tmp) + template_rows(tmp)


def table(rows: list[dict[str, Any]]) -> str:
    head = "| surface | case | expected | observed | ok |\n|---|---|---|---|---|\n"
    body = "".join(
        f"| {r['surface']} | {r['case']} | {r['expected']} | "
        f"{str(r['observed']).replace('|', '/')} | {'yes' if r['ok'] else '**no**'} |\n"
        for r in rows
    )
    return head + body + f"\n{sum(r['ok'] for r in rows)} of {len(rows)} ok\n"


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="attack-parse-budget-") as folder:
        print(table(run(Path(folder))))
