"""The code parsers on real grammars: names, node types, line ranges, exact slices."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from vaultsearch.indexing.chunker import chunk_note
from vaultsearch.models import ParsedNote
from vaultsearch.parsers.code import CodeParser
from vaultsearch.parsers.code_languages import module_path
from vaultsearch.parsers.codeplain import PlainCodeParser

SRC = Path(__file__).resolve().parent.parent / "src"


def outline(note: ParsedNote) -> list[tuple[str, str, int, int]]:
    return [(s.qualified_name, s.node_type, s.start_line, s.end_line) for s in note.sections]


def slices_are_exact(note: ParsedNote) -> None:
    lines = note.text.split("\n")
    for s in note.sections:
        part = note.text[s.start_char : s.end_char]
        assert part == part.strip() and part
        assert part.split("\n")[0] in lines[s.start_line - 1]
        assert part.split("\n")[-1] in lines[s.end_line - 1]


PYTHON = '''\
"""Module doc."""
import os

LIMIT = 3


@dataclass
class Store(Base):
    """Keeps things."""

    size = 1

    # Put one thing in.
    def put(self, item):
        def helper():
            return 1
        return helper()

    @property
    def empty(self):
        return True


async def main():
    pass
'''


def test_python_definitions_with_qualified_names_and_lines() -> None:
    note = CodeParser().parse("src/shop/store.py", PYTHON)
    assert (note.kind, note.language, note.title) == ("code", "python", "shop.store")
    assert outline(note) == [
        ("shop.store", "module", 1, 4),
        ("shop.store.Store", "class_definition", 7, 11),
        ("shop.store.Store.put", "function_definition", 13, 17),
        ("shop.store.Store.empty", "function_definition", 19, 21),
        ("shop.store.main", "function_definition", 24, 25),
    ]
    assert note.sections[2].heading_path == ("Store", "put")
    assert note.sections[1].heading_path == ("Store",)
    assert note.text[note.sections[2].start_char :].startswith("# Put one thing in.")
    assert note.text[note.sections[1].start_char :].startswith("@dataclass")
    slices_are_exact(note)


def test_module_paths() -> None:
    assert module_path("src/vaultsearch/__init__.py", "python") == "vaultsearch"
    assert module_path("pkg/sub/mod.py", "python") == "pkg.sub.mod"
    assert module_path("main.py", "python") == "main"
    assert module_path("src/lib.rs", "rust") == "src.lib"
    assert module_path("web/app.ts", "typescript") == "web.app"


GO_SOURCE = """\
package server

import "net/http"

// Start listens on addr.
func Start(addr string) error { return nil }

type Server struct{ addr string }

// Stop closes the server.
func (s *Server) Stop() {}

type Handler interface{ Serve() }
"""


def test_go_methods_are_named_by_their_receiver() -> None:
    note = CodeParser().parse("cmd/server/server.go", GO_SOURCE)
    assert note.language == "go"
    assert outline(note) == [
        ("cmd.server.server", "module", 1, 3),
        ("cmd.server.server.Start", "function_declaration", 5, 6),
        ("cmd.server.server.Server", "type_spec", 8, 8),
        ("cmd.server.server.Server.Stop", "method_declaration", 10, 11),
        ("cmd.server.server.Handler", "type_spec", 13, 13),
    ]
    slices_are_exact(note)


RUST = """\
use std::io;

/// A point.
struct Point { x: i32 }

impl<T> Shape for Point<T> {
    /// The area.
    fn area(&self) -> f64 {
        0.0
    }
}

trait Shape {
    fn area(&self) -> f64;
}

mod util {
    pub fn clamp(v: i32) -> i32 { v }
}
"""


def test_rust_impl_trait_and_mod_members() -> None:
    note = CodeParser().parse("src/geo.rs", RUST)
    names = [(q, t) for q, t, _, _ in outline(note)]
    assert names == [
        ("src.geo", "module"),
        ("src.geo.Point", "struct_item"),
        ("src.geo.Point", "impl_item"),
        ("src.geo.Point.area", "function_item"),
        ("src.geo.Shape", "trait_item"),
        ("src.geo.Shape.area", "function_signature_item"),
        ("src.geo.util", "mod_item"),
        ("src.geo.util.clamp", "function_item"),
    ]
    area = next(s for s in note.sections if s.qualified_name == "src.geo.Point.area")
    assert (area.start_line, area.end_line) == (7, 10)  # doc comment included
    slices_are_exact(note)


JAVA = """\
package com.shop;

import java.util.List;

/** A cart. */
public class Cart {
    private int size;

    Cart() {}

    /** Adds an item. */
    @Override
    public void add(String item) {
        size++;
    }

    enum State { OPEN, PAID }
}
"""


def test_java_uses_the_package_and_nests_members() -> None:
    note = CodeParser().parse("src/main/java/com/shop/Cart.java", JAVA)
    assert note.title == "com.shop.Cart"
    assert outline(note) == [
        ("com.shop", "module", 1, 3),
        ("com.shop.Cart", "class_declaration", 5, 7),
        ("com.shop.Cart.Cart", "constructor_declaration", 9, 9),
        ("com.shop.Cart.add", "method_declaration", 11, 15),
        ("com.shop.Cart.State", "enum_declaration", 17, 17),
    ]
    slices_are_exact(note)


TYPESCRIPT = """\
import { x } from "./x";

export class Cart {
  total(): number {
    return 0;
  }
}

// Formats a price.
export function formatPrice(p: number): string {
  return `${p}`;
}

export const parseHTTPResponse = async (r: Response) => r.json();

interface Item { name: string }

const LIMIT = 10;
"""


@pytest.mark.parametrize(
    ("path", "language"), [("web/cart.ts", "typescript"), ("web/cart.tsx", "typescript")]
)
def test_typescript_and_tsx(path: str, language: str) -> None:
    note = CodeParser().parse(path, TYPESCRIPT)
    assert note.language == language
    assert [(q, t) for q, t, _, _ in outline(note)] == [
        ("web.cart", "module"),
        ("web.cart.Cart", "class_declaration"),
        ("web.cart.Cart.total", "method_definition"),
        ("web.cart.formatPrice", "function_declaration"),
        ("web.cart.parseHTTPResponse", "variable_declarator"),
        ("web.cart.Item", "interface_declaration"),
        ("web.cart", "module"),
    ]
    fmt = note.sections[3]
    assert note.text[fmt.start_char : fmt.end_char].startswith(
        "// Formats a price.\nexport function"
    )
    slices_are_exact(note)


def test_javascript_jsx_and_non_ascii_offsets() -> None:
    text = 'const título = "ünïcödé ✓";\nexport function Grüß() {\n  return <b>héllo</b>;\n}\nclass A { m() { return "ß"; } }\n'
    note = CodeParser().parse("ui/app.jsx", text)
    assert note.language == "javascript"
    assert outline(note) == [
        ("ui.app", "module", 1, 1),
        ("ui.app.Grüß", "function_declaration", 2, 4),
        ("ui.app.A", "class_declaration", 5, 5),
        ("ui.app.A.m", "method_definition", 5, 5),
    ]
    grüß = note.sections[1]
    assert (
        note.text[grüß.start_char : grüß.end_char]
        == "export function Grüß() {\n  return <b>héllo</b>;\n}"
    )
    slices_are_exact(note)


def test_broken_code_still_parses_into_sections() -> None:
    note = CodeParser().parse("bad.py", "def ok():\n    return 1\n\ndef broken(:\n    pass\n")
    assert note.sections and note.sections[0].qualified_name == "bad.ok"
    empty = CodeParser().parse("empty.py", "")
    assert empty.sections == () and empty.kind == "code"


def test_an_oversized_function_is_split_into_chunks_that_keep_its_name() -> None:
    body = "\n".join(f"    value_{i} = compute_{i}(value_{i - 1})" for i in range(1, 120))
    text = f"def big():\n{body}\n    return value_119\n\n\ndef small():\n    return 1\n"
    note = CodeParser().parse("pkg/big.py", text)
    chunks = chunk_note(note, size=1000, overlap=100)
    big = [c for c in chunks if c.qualified_name == "pkg.big.big"]
    assert len(big) > 3
    assert all(c.node_type == "function_definition" and c.heading_path == ("big",) for c in big)
    assert [c.qualified_name for c in chunks][-1] == "pkg.big.small"
    assert chunks[-1].embed_text == "pkg.big\nsmall\ndef small():\n    return 1"


def test_a_language_without_a_grammar_goes_to_the_plain_parser() -> None:
    note = CodeParser().parse("lib/x.rb", "def foo\n  1\nend\n")
    assert (note.kind, note.language) == ("code", "rb")


def test_plain_code_blocks_follow_blank_lines_and_indentation() -> None:
    funcs = [f"def f{i}(x)\n  y = x\n\n  y * {i}\nend\n" + "# " + "z" * 300 for i in range(6)]
    text = "require 'set'\n\n" + "\n\n".join(funcs) + "\n"
    note = PlainCodeParser().parse("lib/util.rb", text)
    assert (note.kind, note.language, note.title) == ("code", "rb", "lib.util")
    assert len(note.sections) > 1
    for s in note.sections:
        part = note.text[s.start_char : s.end_char]
        assert len(part) <= 1000
        assert part.startswith(("require", "def f")) and part.endswith("z")
        assert part.count("def f") == part.count("\nend\n")  # never cut inside a body
        assert s.node_type == "block"
    assert note.sections[-1].end_line == len(text.splitlines())


def test_grammars_load_with_the_network_refused(tmp_path: Path) -> None:
    """Every grammar is inside an installed wheel: parsing works with sockets blocked."""
    script = textwrap.dedent(
        """
        import socket
        def refuse(*a, **k):
            raise OSError("network used")
        socket.socket = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from vaultsearch.parsers.code import CodeParser
        p = CodeParser()
        for path, text in [("a.py", "def f(): pass"), ("a.js", "function f() {}"),
                           ("a.ts", "function f() {}"), ("a.tsx", "function f() {}"),
                           ("a.go", "package a\\nfunc f() {}"), ("a.rs", "fn f() {}"),
                           ("A.java", "class A { void f() {} }")]:
            names = [s.qualified_name for s in p.parse(path, text).sections]
            assert any(n.endswith("f") for n in names), (path, names)
        print("ok")
        """
    )
    env = {"PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_minified_one_line_non_ascii_code_slices_exactly() -> None:
    text = ";".join(f"function fé{i}(){{return 'ü{i}'}}" for i in range(2000))
    note = CodeParser().parse("dist/app.min.js", text)
    assert len(note.sections) == 2000
    for i in (0, 1, 999, 1999):
        s = note.sections[i]
        assert note.text[s.start_char : s.end_char] == f"function fé{i}(){{return 'ü{i}'}}"
        assert (s.start_line, s.end_line, s.qualified_name) == (1, 1, f"dist.app.min.fé{i}")


def test_a_missing_grammar_package_falls_back_to_blank_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A grammar left out of an install must cost structure, not the file."""
    import vaultsearch.parsers.code as code_module
    from vaultsearch.parsers.code_languages import GO

    missing = replace(GO, module="tree_sitter_go_not_installed")
    monkeypatch.setitem(code_module.BY_EXTENSION, "go", missing)
    note = CodeParser().parse("cmd/main.go", GO_SOURCE)
    assert (note.kind, note.language) == ("code", "go")
    assert note.sections and all(s.node_type == "block" for s in note.sections)
    assert note.warnings == (
        "grammar package tree_sitter_go_not_installed is not installed; read by blank lines",
    )
