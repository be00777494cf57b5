#!/usr/bin/env python3
"""The import-layering contract of ``src/vaultsearch``, checked by parsing imports.

A module may import from its own layer and from every layer below it, never from one
above; layers on one tier (``indexing`` and ``search``) may not import each other.
Imports inside ``if TYPE_CHECKING:`` are checked too (they are the same dependency on
paper), imports inside a function as well (a lazy import is still an import). The only
way past the contract is ``EXCEPTIONS``: one line per import, each with its reason.

Run: ``python scripts/layers.py [SRC]`` (``SRC`` defaults to this repository's
``src``); exit 0 when the contract holds, 1 with one line per broken import;
``--map`` prints every module's layer instead.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = "vaultsearch"

TIERS: tuple[tuple[str, ...], ...] = (
    ("base",),
    ("parsers", "embedding"),
    ("store",),
    ("indexing", "search"),
    ("writes",),
    ("reports",),
    ("application",),
    ("clients",),
)
"""Bottom first. A layer imports from lower tiers and itself, not from its tier-mates."""

LAYER_OF: dict[str, str] = {
    # base: data types, errors and settings that everything else reads
    "vaultsearch": "base",
    "vaultsearch.models": "base",
    "vaultsearch.errors": "base",
    "vaultsearch.fault": "base",
    "vaultsearch.config": "base",
    "vaultsearch.config_layers": "base",
    "vaultsearch.sourceconfig": "base",
    "vaultsearch.gitvalues": "base",
    "vaultsearch.validtext": "base",
    "vaultsearch.vaultpaths": "base",
    "vaultsearch.uris": "base",
    "vaultsearch.links": "base",
    "vaultsearch.parsermap": "base",
    "vaultsearch.listeners": "base",
    "vaultsearch._limits": "base",
    "vaultsearch._memory": "base",
    "vaultsearch._runtime": "base",
    "vaultsearch._readable": "base",
    # packages, by prefix
    "vaultsearch.parsers": "parsers",
    "vaultsearch.embedding": "embedding",
    "vaultsearch.store": "store",
    "vaultsearch.indexing": "indexing",
    "vaultsearch.search": "search",
    "vaultsearch.writes": "writes",
    "vaultsearch.reports": "reports",
    # application: the Vault facade and the read-side services every front door calls
    "vaultsearch.app": "application",
    # clients: the front doors
    "vaultsearch.cli": "clients",
    "vaultsearch.server": "clients",
    "vaultsearch.integrations": "clients",
}
"""Module (or package prefix) -> layer. A module not named here fails the check, so a
new module is placed on purpose."""

EXCEPTIONS: dict[tuple[str, str], str] = {
    ("vaultsearch", "vaultsearch.app.vault"): (
        "the package re-exports Vault lazily (PEP 562), so `from vaultsearch import Vault` "
        "works without importing the application at start-up"
    ),
    ("vaultsearch", "vaultsearch.indexing.summary"): (
        "the lazy re-export of IndexCheck and IndexSummary, the public result types"
    ),
    ("vaultsearch", "vaultsearch.search.request"): "the lazy re-export of SearchRequest",
    ("vaultsearch", "vaultsearch.app.searchanswer"): "the lazy re-export of SearchAnswer",
}
"""(importer, imported) -> why it is allowed. Each is a known debt, not a design."""


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    for n in range(len(parts), 1, -1):  # the bare package name covers only __init__
        layer = LAYER_OF.get(".".join(parts[:n]))
        if layer is not None:
            return layer
    return LAYER_OF.get(module)


def tier_of(layer: str) -> int:
    return next(i for i, tier in enumerate(TIERS) if layer in tier)


def module_name(src: Path, file: Path) -> str:
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, imported name) for every import of this package in the file; ``from
    vaultsearch import models`` gives ``vaultsearch.models`` (``closest_known`` then
    finds the module it is or is in)."""
    base = module.split(".") if is_package else module.split(".")[:-1]
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith(PACKAGE)]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                up = base[: len(base) - node.level + 1]
                target = ".".join([*up, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target != PACKAGE and not target.startswith(PACKAGE + "."):
                continue
            # `from vaultsearch.server.http import consoles`: each name may be a module
            out += [(node.lineno, f"{target}.{a.name}") for a in node.names]
    return out


def writer_reaches(tree: ast.AST) -> list[int]:
    """Lines where a front door calls ``.manager()``: the CLI and the servers ask the
    ``Vault`` facade (``files``, ``source_set``, ``verify``, ``repair`` ...), so the
    IndexManager's surface can change without touching a door."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "manager"
        and not node.args
    ]


def closest_known(module: str, known: set[str]) -> str:
    """A name from ``from X import name`` is the module ``X.name`` when there is one,
    else ``X`` itself (``vaultsearch.models.Hit`` resolves to ``vaultsearch.models``)."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        if name in known:
            return name
    return module


def check(src: Path) -> list[str]:
    root = src / PACKAGE
    files = sorted(root.rglob("*.py"))
    known = {module_name(src, f) for f in files}
    problems: list[str] = []
    for file in files:
        module = module_name(src, file)
        mine = layer_of(module)
        where = file.relative_to(src)
        if mine is None:
            problems.append(f"{where}: module {module} has no layer; add it to LAYER_OF")
            continue
        tree = ast.parse(file.read_text(encoding="utf-8"), str(file))
        if mine == "clients":
            problems += [
                f"{where}:{line}: {module} (clients) calls .manager(); ask the Vault facade"
                for line in writer_reaches(tree)
            ]
        for line, target in imports(tree, module, file.name == "__init__.py"):
            target = closest_known(target, known)
            theirs = layer_of(target)
            if theirs is None or theirs == mine:
                continue
            upward = tier_of(theirs) > tier_of(mine)
            sideways = tier_of(theirs) == tier_of(mine)
            if not (upward or sideways):
                continue
            if any(
                module == a and (target == b or target.startswith(b + ".")) for a, b in EXCEPTIONS
            ):
                continue
            how = "up" if upward else "sideways"
            problems.append(
                f"{where}:{line}: {module} ({mine}) imports {target} ({theirs}), "
                f"{how} the layers {' < '.join('|'.join(t) for t in TIERS)}"
            )
    return problems


def layer_map(src: Path) -> dict[str, list[str]]:
    """layer -> its modules, bottom first (``--map``)."""
    out: dict[str, list[str]] = {layer: [] for tier in TIERS for layer in tier}
    for file in sorted((src / PACKAGE).rglob("*.py")):
        module = module_name(src, file)
        out.setdefault(layer_of(module) or "(none)", []).append(module)
    return out


def main(argv: list[str]) -> int:
    args = [a for a in argv[1:] if a != "--map"]
    src = Path(args[0]) if args else Path(__file__).resolve().parent.parent / "src"
    if "--map" in argv:
        for layer, modules in layer_map(src).items():
            print(f"{layer}: {', '.join(m.removeprefix(PACKAGE + '.') for m in modules)}")
        return 0
    problems = check(src)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} import(s) break the layering contract (scripts/layers.py)")
        return 1
    print(f"layers: {PACKAGE} keeps its import order ({len(EXCEPTIONS)} listed exceptions)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
