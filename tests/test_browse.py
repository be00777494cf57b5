"""Read-only browsing: path confinement, line slices, headings, paging, tags, links."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.conftest import write_files
from vaultsearch import PathOutsideVaultError, QueryError, Vault
from vaultsearch.app.browse import (
    Browser,
    NoteNotFoundError,
    confine,
    file_lines,
    heading_lines,
    page_notes,
    slice_lines,
    tag_counts,
)
from vaultsearch.parsers import MarkdownParser
from vaultsearch.search.filters import NoteMeta

FILES: dict[str, str | bytes] = {
    "garden/Tomatoes.md": """
        ---
        tags: [garden/vegetables]
        ---
        # Tomatoes

        Tomatoes need full sun and deep watering twice a week.
        See [[Composting]] for soil preparation.

        ## Pests

        Hornworms eat tomato leaves.

        ### Aphids

        Spray them off with water.

        ## Harvest

        Pick when deep red. ![[Composting]] and [[Nowhere]].
        """,
    "garden/Composting.md": """
        ---
        tags: [garden]
        ---
        # Composting

        Kitchen scraps turn into humus; feed it to the [[Tomatoes]].
        """,
    "work/Meetings.md": "# Meetings\n\nWeekly planning about compost for the [[Composting]] bins.\n",
    "work/Budget.md": "# Budget\n\nNumbers for the [[Meetings]].\n",
    "notes.txt": "plain text note\n",
    "image.png": b"\x89PNG\r\n",
}


@pytest.fixture
def root(write_vault) -> Path:  # type: ignore[no-untyped-def]
    return write_vault(FILES)


# --- confinement ------------------------------------------------------------------------
def test_confine_accepts_paths_that_stay_inside(root: Path) -> None:
    assert confine(root, "garden/Tomatoes.md")[0] == "garden/Tomatoes.md"
    assert confine(root, "garden/../work/Meetings.md")[0] == "work/Meetings.md"
    assert confine(root, "garden\\Tomatoes.md")[0] == "garden/Tomatoes.md"
    assert confine(root, str(root / "work" / "Budget.md"))[0] == "work/Budget.md"


@pytest.mark.parametrize("path", ["../secret.md", "garden/../../secret.md", "/etc/passwd"])
def test_confine_refuses_paths_that_leave(root: Path, path: str) -> None:
    with pytest.raises(PathOutsideVaultError, match="outside the vault"):
        confine(root, path)


def test_confine_judges_symlinks_by_their_target(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n")
    (root / "escape.md").symlink_to(outside / "secret.md")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "alias.md").symlink_to(root / "work" / "Budget.md")
    for path in ("escape.md", "linked/secret.md"):
        with pytest.raises(PathOutsideVaultError):
            confine(root, path)
    rel, real = confine(root, "alias.md")
    assert rel == "alias.md" and real == (root / "work" / "Budget.md").resolve()


def test_find_tries_the_extension_then_the_file_name_and_suggests(root: Path) -> None:
    browser = Browser(Vault.open(root))
    assert browser.find("garden/Tomatoes")[0] == "garden/Tomatoes.md"
    assert browser.find("Budget")[0] == "work/Budget.md"
    assert browser.find("notes.txt")[0] == "notes.txt"
    with pytest.raises(NoteNotFoundError, match=r"did you mean .garden/Tomatoes\.md"):
        browser.find("garden/Tomatos.md")
    with pytest.raises(NoteNotFoundError, match="not a note"):
        browser.find("image.png")


# --- lines and headings -----------------------------------------------------------------
def test_slice_lines_numbers_file_lines_with_context() -> None:
    lines = file_lines("a\nb\r\nc\nd\ne\n")
    assert lines == ["a", "b", "c", "d", "e"]
    s = slice_lines(lines, 3, 3, context=1)
    assert (s.start_line, s.end_line, s.total_lines, s.next_start_line) == (2, 4, 5, None)
    assert s.text == "2| b\n3| c\n4| d"
    assert slice_lines(lines, 4, 99).text == "4| d\n5| e"


def test_slice_lines_is_bounded_and_says_where_to_go_on() -> None:
    lines = [f"line {i}" for i in range(1, 1001)]
    s = slice_lines(lines)
    assert (s.start_line, s.end_line, s.next_start_line) == (1, 200, 201)
    assert s.text.splitlines()[-1] == " 200| line 200"
    wide = slice_lines(["x" * 300] * 100, max_chars=1000)
    assert (wide.end_line, wide.next_start_line) == (3, 4)
    rest = slice_lines(lines, wide.next_start_line, 5)
    assert rest.start_line == 4 and rest.next_start_line is None


def test_slice_lines_rejects_ranges_outside_the_note() -> None:
    with pytest.raises(QueryError, match="has 3 lines"):
        slice_lines(["a", "b", "c"], 4)
    with pytest.raises(QueryError, match="before start_line"):
        slice_lines(["a", "b", "c"], 3, 2)
    assert slice_lines([]).end_line == 0


def test_heading_lines_selects_a_section_with_its_subsections() -> None:
    raw = FILES["garden/Tomatoes.md"]
    assert isinstance(raw, str)
    text = textwrap.dedent(raw).lstrip("\n")
    note = MarkdownParser().parse("garden/Tomatoes.md", text)
    total = len(file_lines(text))
    assert heading_lines(note.headings, total, "## pests") == (9, 16, "Tomatoes > Pests")
    assert file_lines(text)[16] == "## Harvest"
    assert heading_lines(note.headings, total, "Tomatoes > Harvest")[1] == total
    with pytest.raises(QueryError, match="'Tomatoes > Pests > Aphids'"):
        heading_lines(note.headings, total, "Weeds")


# --- listings ---------------------------------------------------------------------------
def _meta(i: int, path: str, tags: tuple[str, ...] = (), date: float = 0.0) -> NoteMeta:
    return NoteMeta(i, path, path.rsplit("/", 1)[-1], tags, {}, date)


def test_paging_by_cursor_shows_every_note_once_even_when_notes_arrive() -> None:
    for sort in ("path", "date"):
        notes = [_meta(i, f"n/{i:02d}.md", date=float(i % 4)) for i in range(25)]
        seen: list[str] = []
        cursor = None
        while True:
            page = page_notes(notes, sort=sort, limit=7, cursor=cursor)  # type: ignore[arg-type]
            seen += [n.path for n in page.notes]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
            if len(seen) == 7:  # a note that sorts first arrives mid-listing: no shift
                notes.append(_meta(99, "a/first.md", date=9.0))
        assert len(seen) == len(set(seen)) == 25 and "a/first.md" not in seen
        assert page.total == 26
    dated = page_notes(notes, sort="date", limit=3).notes
    assert [n.path for n in dated] == ["a/first.md", "n/03.md", "n/07.md"]
    assert dated[0].date == "1970-01-01"


def test_paging_rejects_foreign_cursors_and_filters() -> None:
    notes = [
        _meta(1, "garden/a.md", ("garden/vegetables",)),
        _meta(2, "garden/b.md", ("garden",)),
        _meta(3, "work/c.md", ("work",)),
    ]
    assert [n.path for n in page_notes(notes, tag="garden").notes] == ["garden/a.md", "garden/b.md"]
    assert [n.path for n in page_notes(notes, folder="work").notes] == ["work/c.md"]
    cursor = page_notes(notes, limit=1).next_cursor
    assert cursor is not None
    with pytest.raises(QueryError, match="cursor"):
        page_notes(notes, sort="date", cursor=cursor)
    with pytest.raises(QueryError, match="cursor"):
        page_notes(notes, cursor="not-a-cursor")


def test_tag_counts_roll_up_to_parents() -> None:
    notes = [
        _meta(1, "a.md", ("Project/Alpha", "#todo")),
        _meta(2, "b.md", ("project/beta/x",)),
        _meta(3, "c.md", ("project",)),
    ]
    rows = {t.tag: (t.notes, t.direct) for t in tag_counts(notes)}
    assert rows == {
        "project": (3, 1),
        "project/alpha": (1, 1),
        "project/beta": (1, 0),
        "project/beta/x": (1, 1),
        "todo": (1, 1),
    }
    assert tag_counts(notes)[0].tag == "project"


# --- with an index ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Browser:
    root = write_files(tmp_path_factory.mktemp("browse") / "vault", FILES)
    vault = Vault.open(root)
    vault.index()
    return Browser(vault)


def test_read_note_gives_lines_frontmatter_and_links(indexed: Browser) -> None:
    r = indexed.read_note("garden/Tomatoes.md", start_line=6, end_line=6, context=1)
    assert r.slice.text.splitlines() == [
        "5| ",
        "6| Tomatoes need full sun and deep watering twice a week.",
        "7| See [[Composting]] for soil preparation.",
    ]
    assert r.frontmatter == {"tags": ["garden/vegetables"]} and r.title == "Tomatoes"
    assert r.outlinks == ("garden/Composting.md",)
    assert r.backlinks == ("garden/Composting.md",)
    assert r.unresolved == ("Nowhere",) and r.indexed
    section = indexed.read_note("garden/Tomatoes", heading="Harvest")
    assert section.heading == "Tomatoes > Harvest"
    assert section.slice.text.splitlines()[0].endswith("## Harvest")


def test_related_lists_links_nearby_notes_and_similar_ones(indexed: Browser) -> None:
    r = indexed.related("garden/Tomatoes.md", depth=2, limit=3)
    assert r is not None
    assert [x.path for x in r.outlinks] == ["garden/Composting.md"]
    assert [x.path for x in r.embeds] == ["garden/Composting.md"]
    assert [x.path for x in r.backlinks] == ["garden/Composting.md"]
    assert [(x.path, x.distance) for x in r.nearby] == [("work/Meetings.md", 2)]
    similar = [x.path for x in r.similar]
    assert "garden/Tomatoes.md" not in similar and "garden/Composting.md" in similar
    assert all(-1 <= x.score <= 1 for x in r.similar)
    assert len(similar) == 3


def test_notes_fall_back_to_the_files_before_any_index(root: Path) -> None:
    browser = Browser(Vault.open(root, index_dir=root.parent / "no-index"))
    notes, indexed = browser.notes()
    assert not indexed
    assert sorted(n.path for n in notes) == [
        "garden/Composting.md", "garden/Tomatoes.md", "notes.txt", "work/Budget.md",
        "work/Meetings.md",
    ]  # fmt: skip
    assert browser.related("work/Budget.md") is None
    assert browser.read_note("work/Budget.md").outlinks == ()
