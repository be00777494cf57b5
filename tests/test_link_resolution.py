from __future__ import annotations

import pytest

from vaultsearch.links import LinkResolver

VAULT: list[tuple[str, list[str]]] = [
    ("Home.md", ["Start", "Dashboard"]),
    ("folder/My Note.md", ["MN"]),
    ("folder/sub/Deep.md", []),
    ("archive/folder/sub/Deep.md", []),
    ("projects/Alpha.md", ["Project A"]),
    ("projects/2024/Alpha.md", []),
    ("b/Same.md", []),
    ("a/Same.md", []),
    ("Inbox/Café ☕.md", []),
    ("dendron.topic.tasks.md", []),
    ("attachments/image.png", []),
    ("image.md", []),
    ("docs/guide/setup.md", []),
    ("docs/README.md", []),
    ("Start.md", []),
]


@pytest.fixture(scope="module")
def resolver() -> LinkResolver:
    return LinkResolver(VAULT)


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("folder/My Note.md", "folder/My Note.md"),
        ("folder/My Note", "folder/My Note.md"),
        ("FOLDER/my note", "folder/My Note.md"),
        ("/folder/My Note", "folder/My Note.md"),
        ("attachments/image.png", "attachments/image.png"),
    ],
)
def test_exact_vault_path(resolver: LinkResolver, target: str, expected: str) -> None:
    assert resolver.resolve(target) == expected


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("My Note", "folder/My Note.md"),
        ("my note", "folder/My Note.md"),
        ("My Note.md", "folder/My Note.md"),
        ("MY NOTE.MD", "folder/My Note.md"),
        ("Café ☕", "Inbox/Café ☕.md"),
        ("dendron.topic.tasks", "dendron.topic.tasks.md"),
    ],
)
def test_file_name_match_ignores_case_and_extension(
    resolver: LinkResolver, target: str, expected: str
) -> None:
    assert resolver.resolve(target) == expected


def test_shortest_path_wins_among_same_names(resolver: LinkResolver) -> None:
    assert resolver.resolve("Alpha") == "projects/Alpha.md"
    assert resolver.resolve("Deep") == "folder/sub/Deep.md"


def test_equal_length_tie_is_broken_lexicographically(resolver: LinkResolver) -> None:
    assert resolver.resolve("Same") == "a/Same.md"
    assert LinkResolver(reversed(VAULT)).resolve("Same") == "a/Same.md"


def test_path_suffix_match(resolver: LinkResolver) -> None:
    assert resolver.resolve("sub/Deep") == "folder/sub/Deep.md"
    assert resolver.resolve("folder/sub/Deep") == "folder/sub/Deep.md"
    assert resolver.resolve("2024/Alpha") == "projects/2024/Alpha.md"
    assert resolver.resolve("2024/alpha.md") == "projects/2024/Alpha.md"
    assert resolver.resolve("older/Deep") is None


def test_exact_path_beats_suffix_and_name(resolver: LinkResolver) -> None:
    assert resolver.resolve("archive/folder/sub/Deep") == "archive/folder/sub/Deep.md"


def test_alias_match_is_case_insensitive(resolver: LinkResolver) -> None:
    assert resolver.resolve("Dashboard") == "Home.md"
    assert resolver.resolve("project a") == "projects/Alpha.md"
    assert resolver.resolve("mn") == "folder/My Note.md"


def test_file_name_beats_alias(resolver: LinkResolver) -> None:
    assert resolver.resolve("Start") == "Start.md"


def test_alias_ambiguity_is_deterministic() -> None:
    notes = [
        ("zz/long/Second.md", ["Shared"]),
        ("First.md", ["shared"]),
        ("b/Third.md", ["SHARED"]),
    ]
    assert LinkResolver(notes).resolve("Shared") == "First.md"
    assert LinkResolver(reversed(notes)).resolve("shared") == "First.md"


def test_relative_markdown_links(resolver: LinkResolver) -> None:
    assert resolver.resolve("../README.md", "docs/guide/setup.md") == "docs/README.md"
    assert resolver.resolve("./setup.md", "docs/guide/other.md") == "docs/guide/setup.md"
    assert resolver.resolve("guide/setup.md", "docs/README.md") == "docs/guide/setup.md"
    assert resolver.resolve("../../../escape.md", "docs/guide/setup.md") is None


def test_vault_path_is_tried_before_source_folder() -> None:
    resolver = LinkResolver([("x/Note.md", []), ("x/x/Note.md", [])])
    assert resolver.resolve("x/Note", "x/Source.md") == "x/Note.md"


def test_attachments_resolve_only_to_real_files(resolver: LinkResolver) -> None:
    assert resolver.resolve("image.png") == "attachments/image.png"
    assert resolver.resolve("IMAGE.PNG") == "attachments/image.png"
    assert resolver.resolve("image") == "image.md"
    assert resolver.resolve("missing.png") is None
    assert LinkResolver([("image.md", [])]).resolve("image.png") is None


def test_unresolved_and_empty_targets(resolver: LinkResolver) -> None:
    assert resolver.resolve("Nowhere") is None
    assert resolver.resolve("") is None
    assert resolver.resolve("   ") is None
    assert LinkResolver([]).resolve("Home") is None


def test_build_ignores_empty_paths_and_aliases() -> None:
    resolver = LinkResolver([("", ["x"]), ("Real.md", ["", "  ", "Alias"])])
    assert resolver.resolve("x") is None
    assert resolver.resolve("alias") == "Real.md"


def test_resolution_scales_to_many_notes() -> None:
    notes = [(f"f{i % 50}/note {i}.md", [f"alias {i}"]) for i in range(20_000)]
    resolver = LinkResolver(notes)
    assert resolver.resolve("note 19999") == "f49/note 19999.md"
    assert resolver.resolve("ALIAS 7") == "f7/note 7.md"
    assert resolver.resolve("f3/note 3") == "f3/note 3.md"


def test_dendron_style_label_first_links_resolve_through_the_label() -> None:
    resolver = LinkResolver([("dendron.topic.publish.md", ()), ("Label Note.md", ())])
    assert (
        resolver.resolve_link("Publishing", "dendron.topic.publish") == "dendron.topic.publish.md"
    )
    # an Obsidian link whose target resolves keeps its target, whatever the label says
    assert resolver.resolve_link("Label Note", "dendron.topic.publish") == "Label Note.md"
    assert resolver.resolve_link("Nowhere", "Also nowhere") is None
    assert resolver.resolve_link("Nowhere", None) is None


def _targets(paths: list[str]) -> list[str]:
    """Every way a link could name these files, and the case and folder variants that
    make names collide: what two resolvers must answer alike."""
    out = ["Nowhere", "a/", "../x", "./Same"]
    for path in paths:
        stem = path.rsplit(".", 1)[0]
        base = stem.rsplit("/", 1)[-1]
        out += [path, stem, base, path.upper(), base.lower(), f"./{base}", f"../{base}"]
        out += [f"{base} alias", f"sub/{base}", path.swapcase()]
    return out


def _answers(resolver: LinkResolver, targets: list[str], sources: list[str]) -> list[object]:
    return [resolver.resolve(t, s) for s in sources for t in targets]


def test_adding_and_removing_files_resolves_as_a_fresh_build() -> None:
    """A long-lived writer adds, removes and re-adds files (a move is both, an alias
    change too) instead of building again: after every step every link resolves as a
    resolver built from the files now there. Names collide on purpose: the same file
    name in several folders, paths differing only in case, a stem shared by a note and
    a file, several notes with one alias, a path added twice."""
    import random

    rng = random.Random(10)
    names = ["Same", "same", "Other", "Deep", "x"]
    folders = ["", "a/", "A/", "a/b/", "sub/"]
    exts = [".md", ".MD", ".markdown", "", ".png"]
    kept: list[tuple[str, list[str]]] = []
    resolver = LinkResolver([])
    changed = 0
    for step in range(400):
        if kept and rng.random() < 0.45:
            path = rng.choice(kept)[0]  # its latest adding goes, as ``remove`` says
            kept.pop(max(i for i, (p, _) in enumerate(kept) if p == path))
            assert resolver.remove(path)
        else:
            path = f"{rng.choice(folders)}{rng.choice(names)}{rng.choice(exts)}"
            aliases = [f"{rng.choice(names)} alias" for _ in range(rng.randint(0, 2))]
            kept.append((path, aliases))
            resolver.add(path, aliases)
        paths = sorted({p for p, _ in kept})
        targets = _targets([*paths, "Same.md", "a/b/Deep.md"])
        sources = ["Note.md", "a/b/Note.md", "sub/Note.md"]
        fresh = LinkResolver(kept)
        got, want = _answers(resolver, targets, sources), _answers(fresh, targets, sources)
        assert got == want, step
        changed += got != _answers(LinkResolver(kept[:-1]), targets, sources)
    assert not resolver.remove("never/added.md")
    assert changed > 100, "the steps hardly changed any answer: nothing was tested"
