"""Which syntax nodes are the definitions of each language the code parser knows.

Grammars come only from installed wheels (``tree-sitter-python`` and friends), each
a compiled library inside its package: nothing is fetched at run time, unlike grammar
bundles that download on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from pathlib import PurePosixPath
from typing import Any

from tree_sitter import Language


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    name: str
    """What a hit reports as its language."""
    module: str
    """The grammar package, imported on first use."""
    function: str
    """The package's function returning the grammar pointer."""
    containers: frozenset[str]
    """Definitions whose members are definitions too (classes, impl blocks, modules)."""
    leaves: frozenset[str]
    """Definitions taken whole (functions, methods, type declarations)."""
    transparent: frozenset[str]
    """Nodes looked through for definitions: bodies, export and decorator wrappers."""

    def load(self) -> Language:
        package: Any = import_module(self.module)
        return Language(getattr(package, self.function)())


_JS_CONTAINERS = frozenset({"class_declaration"})
_JS_LEAVES = frozenset(
    {"function_declaration", "generator_function_declaration", "method_definition"}
    | {"variable_declarator"}
)
_JS_TRANSPARENT = frozenset(
    {"export_statement", "lexical_declaration", "variable_declaration", "class_body"}
)
_TS_CONTAINERS = _JS_CONTAINERS | {"abstract_class_declaration", "internal_module", "module"}
_TS_LEAVES = _JS_LEAVES | {
    "interface_declaration", "enum_declaration", "type_alias_declaration",
    "abstract_method_signature",
}  # fmt: skip
_TS_TRANSPARENT = _JS_TRANSPARENT | {"expression_statement", "statement_block"}


def _spec(
    name: str, module: str, containers: set[str], leaves: set[str], transparent: set[str],
    function: str = "language",
) -> LanguageSpec:  # fmt: skip
    return LanguageSpec(
        name, module, function, frozenset(containers), frozenset(leaves), frozenset(transparent)
    )


PYTHON = _spec(
    "python", "tree_sitter_python", {"class_definition"}, {"function_definition"},
    {"decorated_definition", "block"},
)  # fmt: skip
JAVASCRIPT = _spec(
    "javascript", "tree_sitter_javascript", set(_JS_CONTAINERS), set(_JS_LEAVES),
    set(_JS_TRANSPARENT),
)  # fmt: skip
TYPESCRIPT = _spec(
    "typescript", "tree_sitter_typescript", set(_TS_CONTAINERS), set(_TS_LEAVES),
    set(_TS_TRANSPARENT), "language_typescript",
)  # fmt: skip
TSX = _spec(
    "typescript", "tree_sitter_typescript", set(_TS_CONTAINERS), set(_TS_LEAVES),
    set(_TS_TRANSPARENT), "language_tsx",
)  # fmt: skip
GO = _spec(
    "go", "tree_sitter_go", set(), {"function_declaration", "method_declaration", "type_spec"},
    {"type_declaration"},
)  # fmt: skip
RUST = _spec(
    "rust", "tree_sitter_rust", {"impl_item", "trait_item", "mod_item"},
    {"function_item", "function_signature_item", "struct_item", "enum_item", "union_item"}
    | {"type_item", "macro_definition"},
    {"declaration_list"},
)  # fmt: skip
JAVA = _spec(
    "java", "tree_sitter_java",
    {"class_declaration", "interface_declaration", "enum_declaration", "record_declaration"}
    | {"annotation_type_declaration"},
    {"method_declaration", "constructor_declaration"},
    {"class_body", "interface_body", "enum_body", "enum_body_declarations"}
    | {"annotation_type_body"},
)  # fmt: skip

BY_EXTENSION: dict[str, LanguageSpec] = {
    "py": PYTHON,
    "pyi": PYTHON,
    "js": JAVASCRIPT,
    "mjs": JAVASCRIPT,
    "cjs": JAVASCRIPT,
    "jsx": JAVASCRIPT,
    "ts": TYPESCRIPT,
    "mts": TYPESCRIPT,
    "cts": TYPESCRIPT,
    "tsx": TSX,
    "go": GO,
    "rs": RUST,
    "java": JAVA,
}

_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)


def definition_name(spec: LanguageSpec, node: Any) -> tuple[str, ...] | None:
    """The name parts a definition adds to its scope; ``None`` when the node is not one
    after all (a ``const`` holding a number, an anonymous default export)."""
    kind = node.type
    if kind == "variable_declarator":
        value = node.child_by_field_name("value")
        if value is None or value.type not in _FUNCTION_VALUES:
            return None
    if kind == "impl_item":
        return _text_parts(node.child_by_field_name("type"))
    if kind == "method_declaration" and spec.name == "go":
        receiver = _go_receiver(node.child_by_field_name("receiver"))
        name = _text_parts(node.child_by_field_name("name"))
        if name is None:
            return None
        return (receiver, *name) if receiver else name
    return _text_parts(node.child_by_field_name("name"))


def _text_parts(node: Any) -> tuple[str, ...] | None:
    if node is None or node.text is None:
        return None
    text = node.text.decode("utf-8", "replace").split("<", 1)[0].strip()
    return (text,) if text else None


def _go_receiver(receiver: Any) -> str:
    """``func (s *Server) Start()`` belongs to ``Server``."""
    found: list[str] = []

    def visit(n: Any) -> None:
        if n.type == "type_identifier" and not found and n.text is not None:
            found.append(n.text.decode("utf-8", "replace"))
        for c in n.named_children:
            visit(c)

    if receiver is not None:
        visit(receiver)
    return found[0] if found else ""


def module_path(path: str, language: str) -> str:
    """The file's dotted path: ``pkg/mod.py`` is ``pkg.mod``; for Python a package's
    ``__init__`` is the package itself and a leading ``src/`` folder is not a package."""
    p = PurePosixPath(path)
    parts = [*p.parent.parts, p.stem]
    if language == "python":
        if parts[-1] == "__init__" and len(parts) > 1:
            parts.pop()
        if parts[0] == "src" and len(parts) > 1:
            parts = parts[1:]
    return ".".join(parts)


def extension(path: str) -> str:
    return PurePosixPath(path).suffix.lower().removeprefix(".")
