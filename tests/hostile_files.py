"""Hostile files for a vault: one place for the cases the suite and bench/ both run.

Each case puts one odd file (or folder, or link) into a vault that also holds normal
notes, and says what must come of it: indexed, skipped with a recorded reason, or left
out by the ignore rules. Whatever the case, the normal notes must stay indexed and
searchable, and nothing may raise or hang.
"""

from __future__ import annotations

import os
import random
import socket
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Expect = Literal["indexed", "failed", "ignored", "indexed or failed"]

NORMAL_NOTES: dict[str, str] = {
    "alpha.md": "# Alpha\n\nPlums ripen in late summer.\n",
    "sub/beta.md": "# Beta\n\nKumquats are small citrus fruits.\n",
    "gamma.txt": "Quinces are hard and fragrant.\n",
}
NORMAL_WORDS = {"plums": "alpha.md", "kumquats": "sub/beta.md", "quinces": "gamma.txt"}


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    path: str
    """The vault-relative path the outcome is read under (as the catalog shows it)."""
    expect: Expect
    make: Callable[[Path], None]
    slow: bool = False
    """Too slow (or too big) for the test suite; bench only."""
    non_root: bool = False
    """Meaningful only for a user other than root (root reads everything)."""
    word: str | None = None
    """For an indexed case: a word a keyword search must find in it."""


def write_normal_notes(root: Path) -> None:
    for rel, text in NORMAL_NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def _bytes(rel: str | bytes, data: bytes) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        path = os.path.join(os.fsencode(root), rel if isinstance(rel, bytes) else rel.encode())
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)

    return make


def _text(rel: str, text: str) -> Callable[[Path], None]:
    return _bytes(rel, text.encode("utf-8"))


def _fifo(rel: str) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(root / rel)

    return make


def _socket(rel: str) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(root / rel))
        s.close()  # the socket file stays

    return make


def _device(rel: str, kind: int, major: int, minor: int) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        os.mknod(root / rel, 0o644 | kind, os.makedev(major, minor))

    return make


def _link(rel: str, target: str) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / rel)

    return make


def _links(*pairs: tuple[str, str]) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        for rel, target in pairs:
            _link(rel, target)(root)

    return make


def _outside_link(rel: str, is_dir: bool = False) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        outside = root.parent / "outside"
        outside.mkdir(exist_ok=True)
        (outside / "secret.md").write_text("# Secret\n\nnot part of the vault\n")
        os.symlink(outside if is_dir else outside / "secret.md", root / rel)

    return make


def _then(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        for step in steps:
            step(root)

    return make


def _chmod(rel: str, mode: int) -> Callable[[Path], None]:
    return lambda root: os.chmod(root / rel, mode)


def _random_bytes(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


def _alias_bomb(levels: int) -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    names = "abcdefghijklmnop"
    for i in range(1, levels):
        lines.append(f"{names[i]}: &{names[i]} [" + ",".join([f"*{names[i - 1]}"] * 9) + "]")
    return "---\n" + "\n".join(lines) + "\n---\n# Bomb\n\nalias bomb body\n"


def _cases() -> list[Case]:
    c: list[Case] = []

    def add(name: str, path: str, expect: Expect, make: Callable[[Path], None], **kw: Any) -> None:
        c.append(Case(name, path, expect, make, **kw))

    # --- special files named like notes: never opened ---------------------------------
    add("FIFO named like a note", "fifo.md", "failed", _fifo("fifo.md"))
    add("FIFO with .txt", "pipe.txt", "failed", _fifo("pipe.txt"))
    add("FIFO in a subfolder", "deep/er/fifo.markdown", "failed", _fifo("deep/er/fifo.markdown"))
    add("unix socket named like a note", "sock.md", "failed", _socket("sock.md"))
    add("character device (null)", "null.md", "failed", _device("null.md", stat.S_IFCHR, 1, 3))
    add("character device (zero)", "zero.md", "failed", _device("zero.md", stat.S_IFCHR, 1, 5))
    add("block device", "block.md", "failed", _device("block.md", stat.S_IFBLK, 7, 0))
    add("folder named like a note", "folder.md/inner.md", "indexed",
        _text("folder.md/inner.md", "# Inner\n\nwalnuts\n"), word="walnuts")  # fmt: skip
    # --- names -----------------------------------------------------------------------
    add("Latin-1 file name", "caf\\xe9.md", "failed", _bytes(b"caf\xe9.md", b"# Cafe\n"))
    add("invalid UTF-8 name bytes", "\\xff\\xfe.md", "failed", _bytes(b"\xff\xfe.md", b"x\n"))
    add("overlong UTF-8 in a name", "\\xc0\\xaf.md", "failed", _bytes(b"\xc0\xaf.md", b"x\n"))
    add("CESU surrogate bytes in a name", "\\xed\\xa0\\x80.md", "failed",
        _bytes(b"\xed\xa0\x80.md", b"x\n"))  # fmt: skip
    add("Latin-1 folder name", "d\\xe9j\\xe0/", "failed", _bytes(b"d\xe9j\xe0/n.md", b"# N\n"))
    add("spaces in the name", "my note  here .md", "indexed",
        _text("my note  here .md", "# Spaced\n\nhazelnuts\n"), word="hazelnuts")  # fmt: skip
    add("quotes in the name", "it's \"quoted\".md", "indexed",
        _text("it's \"quoted\".md", "# Q\n\npecans\n"), word="pecans")  # fmt: skip
    add("unicode name", "日本語のノート.md", "indexed",
        _text("日本語のノート.md", "# 日本\n\nchestnuts\n"), word="chestnuts")  # fmt: skip
    add("emoji name", "🍑 peach.md", "indexed", _text("🍑 peach.md", "# P\n\npeaches\n"),
        word="peaches")  # fmt: skip
    add("NFD name", "cafe\u0301.md", "indexed", _text("cafe\u0301.md", "# C\n\nespresso\n"),
        word="espresso")  # fmt: skip
    add("leading dash", "-rf.md", "indexed", _text("-rf.md", "# Dash\n\nalmonds\n"),
        word="almonds")  # fmt: skip
    add("looks like an option", "--help.md", "indexed", _text("--help.md", "# H\n\ncashews\n"),
        word="cashews")  # fmt: skip
    long_name = "l" * 240 + ".md"
    add("very long name", long_name, "indexed", _text(long_name, "# L\n\npistachios\n"),
        word="pistachios")  # fmt: skip
    deep = "/".join(f"d{i}" for i in range(60)) + "/deep.md"
    add("60 folders deep", deep, "indexed", _text(deep, "# D\n\nmacadamias\n"), word="macadamias")
    add("newline in the name", "a\nb.md", "indexed", _text("a\nb.md", "# NL\n\nlychees\n"),
        word="lychees")  # fmt: skip
    add("tab in the name", "a\tb.md", "indexed", _text("a\tb.md", "# T\n\nlongans\n"),
        word="longans")  # fmt: skip
    add("backslash in the name", "a\\b.md", "indexed", _text("a\\b.md", "# B\n\nrambutans\n"),
        word="rambutans")  # fmt: skip
    add("glob characters in the name", "[x]*?.md", "indexed",
        _text("[x]*?.md", "# G\n\ndurians\n"), word="durians")  # fmt: skip
    add("wikilink syntax in the name", "a [[b]] #c.md", "indexed",
        _text("a [[b]] #c.md", "# W\n\njackfruits\n"), word="jackfruits")  # fmt: skip
    add("upper-case extension", "SHOUT.MD", "indexed", _text("SHOUT.MD", "# S\n\nguavas\n"),
        word="guavas")  # fmt: skip
    add("editor backup file", "alpha.md~", "ignored", _text("alpha.md~", "# old\n"))
    add("note in node_modules", "node_modules/pkg/readme.md", "ignored",
        _text("node_modules/pkg/readme.md", "# pkg\n"))  # fmt: skip
    add("note in .git", ".git/info/note.md", "ignored", _text(".git/info/note.md", "# git\n"))
    # --- links -----------------------------------------------------------------------
    add("symlink to itself", "loop.md", "failed", _link("loop.md", "loop.md"))
    add("two symlinks in a loop", "ping.md", "failed",
        _links(("ping.md", "pong.md"), ("pong.md", "ping.md")))  # fmt: skip
    add("broken symlink", "broken.md", "failed", _link("broken.md", "nowhere/at/all.md"))
    add("symlink out of the vault", "escape.md", "failed", _outside_link("escape.md"))
    add("folder symlink out of the vault", "escape-dir/", "failed",
        _outside_link("escape-dir", is_dir=True))  # fmt: skip
    add("absolute symlink to /etc/passwd", "passwd.md", "failed",
        _link("passwd.md", "/etc/passwd"))  # fmt: skip
    add("symlink to /dev/zero", "devzero.md", "failed", _link("devzero.md", "/dev/zero"))
    add("symlink to a FIFO in the vault", "to-fifo.md", "failed",
        _then(_fifo("real.fifo"), _link("to-fifo.md", "real.fifo")))  # fmt: skip
    add("symlink to a note in the vault", "alias-of-alpha.md", "indexed",
        _link("alias-of-alpha.md", "alpha.md"), word="plums")  # fmt: skip
    add("folder symlink loop", "up/", "ignored", _link("up", "."))
    # --- permissions (a user other than root) ---------------------------------------
    add(
        "unreadable file",
        "locked.md",
        "failed",
        _then(_text("locked.md", "# L\n\nsecret\n"), _chmod("locked.md", 0)),
        non_root=True,
    )
    add(
        "unreadable folder",
        "closed/",
        "failed",
        _then(_text("closed/n.md", "# N\n"), _chmod("closed", 0)),
        non_root=True,
    )
    add(
        "folder without search permission",
        "noexec/n.md",
        "failed",
        _then(_text("noexec/n.md", "# N\n"), _chmod("noexec", 0o644)),
        non_root=True,
    )
    # --- frontmatter -------------------------------------------------------------------
    add("YAML alias bomb (9 levels)", "bomb.md", "indexed", _text("bomb.md", _alias_bomb(9)),
        word="bomb")  # fmt: skip
    add("YAML alias bomb (12 levels)", "bomb12.md", "indexed",
        _text("bomb12.md", _alias_bomb(12)), word="bomb")  # fmt: skip
    add("recursive YAML anchor", "rec.md", "indexed",
        _text("rec.md", "---\na: &a [*a]\n---\n# R\n\nrecursion\n"), word="recursion")  # fmt: skip
    add("giant frontmatter (1 MB)", "bigfm.md", "indexed",
        _text("bigfm.md", "---\n" + "k: " + "v" * 1_000_000 + "\n---\n# Big\n\nfigs\n"),
        word="figs")  # fmt: skip
    add("frontmatter never closed", "open.md", "indexed",
        _text("open.md", "---\ndates: x\n" + "line\n" * 20000), word="dates")  # fmt: skip
    add("invalid YAML", "badyaml.md", "indexed",
        _text("badyaml.md", "---\n: : [\n---\n# B\n\nolives\n"), word="olives")  # fmt: skip
    add("python object tag", "pyobj.md", "indexed",
        _text("pyobj.md", "---\nx: !!python/object/apply:os.system ['true']\n---\nelderberries\n"),
        word="elderberries")  # fmt: skip
    add("frontmatter is a list", "fmlist.md", "indexed",
        _text("fmlist.md", "---\n- a\n- b\n---\ngooseberries\n"), word="gooseberries")  # fmt: skip
    add("impossible dates", "baddate.md", "indexed",
        _text("baddate.md", "---\ndate: 2023-13-45\nupdated: 99999999999999\n---\nmulberries\n"),
        word="mulberries")  # fmt: skip
    # --- size and shape ------------------------------------------------------------------
    add("100,000 headings", "headings.md", "indexed",
        _text("headings.md", "".join(f"# H{i}\nx\n" for i in range(100_000)) + "tamarinds\n"),
        slow=True)  # fmt: skip
    add("5,000 headings", "headings5k.md", "indexed",
        _text("headings5k.md", "sapotes\n\n" + "".join(f"## H{i}\ny\n" for i in range(5000))),
        word="sapotes")  # fmt: skip
    add("45 MB note", "huge.md", "failed", _text("huge.md", "# Huge\n\n" + "word " * 9_000_000),
        slow=True)  # fmt: skip
    add("2.1 MB note (over the size limit)", "big.md", "failed",
        _text("big.md", "z " * 1_050_000))  # fmt: skip
    add("one 1 MB line", "line.md", "indexed", _text("line.md", "medlars " + "w " * 500_000),
        word="medlars")  # fmt: skip
    add("one 500 KB word", "word.md", "indexed", _text("word.md", "loquats\n\n" + "x" * 500_000),
        word="loquats")  # fmt: skip
    add("200,000 short lines", "lines.md", "indexed",
        _text("lines.md", "persimmons\n" + "a\n" * 200_000), word="persimmons")  # fmt: skip
    add("nested lists 1,000 deep", "lists.md", "indexed",
        _text("lists.md", "yuzus\n\n" + "".join("  " * i + "- item\n" for i in range(1000))),
        word="yuzus")  # fmt: skip
    add("nested quotes 5,000 deep", "quotes.md", "indexed",
        _text("quotes.md", "pomelos\n\n" + "> " * 5000 + "end\n"), word="pomelos")  # fmt: skip
    add("100,000 open brackets", "brackets.md", "indexed",
        _text("brackets.md", "citrons " + "[[" * 100_000), word="citrons")  # fmt: skip
    add("100,000 backticks", "ticks.md", "indexed",
        _text("ticks.md", "limes\n\n" + "`" * 100_000), word="limes")  # fmt: skip
    add("20,000 wikilinks", "links.md", "indexed",
        _text("links.md", "kiwis " + " ".join(f"[[n{i}]]" for i in range(20_000))),
        word="kiwis")  # fmt: skip
    add("20,000 tags", "tags.md", "indexed",
        _text("tags.md", "nectarines " + " ".join(f"#t{i}x" for i in range(20_000))),
        word="nectarines")  # fmt: skip
    add("unclosed code fence", "fence.md", "indexed",
        _text("fence.md", "apricots\n\n```\n" + "code\n" * 10_000), word="apricots")  # fmt: skip
    add("unclosed HTML comment", "comment.md", "indexed",
        _text("comment.md", "currants\n\n<!-- " + "c " * 10_000), word="currants")  # fmt: skip
    add("10,000-character link target", "target.md", "indexed",
        _text("target.md", "boysenberries [x](" + "a" * 10_000 + ")"),
        word="boysenberries")  # fmt: skip
    # --- bytes -----------------------------------------------------------------------
    add("NUL padding after the text", "padded.md", "indexed",
        _bytes("padded.md", b"# Padded\n\nmangoes\n" + b"\x00" * 100_000), word="mangoes")  # fmt: skip
    add("text after NUL padding (an edit)", "edited.md", "indexed",
        _bytes("edited.md", b"# E\n\npapayas\n" + b"\x00" * 4096 + b"added later\n"),
        word="papayas")  # fmt: skip
    add("only NULs", "nuls.md", "indexed", _bytes("nuls.md", b"\x00" * 10_000))
    add("binary junk", "junk.md", "failed", _bytes("junk.md", _random_bytes(50_000, 1)))
    add("PNG renamed .md", "image.md", "failed",
        _bytes("image.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + _random_bytes(4000, 2)))  # fmt: skip
    add("binary junk in a .txt", "junk.txt", "failed", _bytes("junk.txt", _random_bytes(9000, 3)))
    add("UTF-8 BOM", "bom.md", "indexed",
        _bytes("bom.md", b"\xef\xbb\xbf---\ntags: [x]\n---\n# BOM\n\nclementines\n"),
        word="clementines")  # fmt: skip
    add("UTF-16 LE with BOM", "utf16.md", "indexed",
        _bytes("utf16.md", "# Sixteen\n\ntangerines\n".encode("utf-16")), word="tangerines")  # fmt: skip
    add("UTF-16 BE without BOM", "utf16be.md", "indexed",
        _bytes("utf16be.md", "# BE\n\nsatsumas\n".encode("utf-16-be")), word="satsumas")  # fmt: skip
    add("CRLF line ends", "crlf.md", "indexed",
        _bytes("crlf.md", b"---\r\ntitle: CRLF\r\n---\r\n# C\r\n\r\ncranberries\r\n"),
        word="cranberries")  # fmt: skip
    add("CR-only line ends", "cr.md", "indexed", _bytes("cr.md", b"# CR\r\rbilberries\r"),
        word="bilberries")  # fmt: skip
    add("Windows-1252 text", "cp1252.md", "indexed",
        _bytes("cp1252.md", "# Café\n\nraspberries “quoted”\n".encode("cp1252")),
        word="raspberries")  # fmt: skip
    add("overlong and surrogate UTF-8 bytes", "badutf8.md", "indexed",
        _bytes("badutf8.md", b"# Bad\n\nblackberries \xc0\xaf \xed\xa0\x80\n"),
        word="blackberries")  # fmt: skip
    add("empty file", "empty.md", "indexed", _bytes("empty.md", b""))
    add("whitespace only", "blank.md", "indexed", _text("blank.md", " \n\t\n  \n"))
    add("frontmatter only", "fmonly.md", "indexed", _text("fmonly.md", "---\ntitle: x\n---\n"))
    add("control characters", "ctrl.md", "indexed",
        _text("ctrl.md", "# C\x07\x1b[31m\n\nhuckleberries \x01\x02\x7f\n"),
        word="huckleberries")  # fmt: skip
    add("zero-width and bidi characters", "bidi.md", "indexed",
        _text("bidi.md", "# \u202eevil\u202c\n\nsalak\u200b \ufeff\u2066x\u2069 salmonberries\n"),
        word="salmonberries")  # fmt: skip
    add("lone surrogate escapes as text", "surr.md", "indexed",
        _text("surr.md", "# S\n\ncloudberries \\ud800 \\udfff\n"), word="cloudberries")  # fmt: skip
    return c


CASES: list[Case] = _cases()


def catalog_view(index_dir: Path) -> tuple[set[str], dict[str, str]]:
    """(indexed note paths, failed path -> recorded reason) as the catalog holds them."""
    from vaultsearch.store.catalog import Catalog
    from vaultsearch.store.layout import IndexLayout

    catalog = Catalog(IndexLayout(index_dir).live.catalog, readonly=True)
    try:
        notes = {n.path for n in catalog.notes()}
        failures = {p: v[0] for p, v in catalog.failures().items()}
    finally:
        catalog.close()
    return notes, failures


def run_case_outcome(
    notes: set[str], failures: dict[str, str], case: Case
) -> tuple[str, str | None]:
    """(what became of the case's file, the recorded reason if it was skipped)."""
    if case.path in notes:
        return "indexed", None
    if case.path in failures:
        return "failed", failures[case.path]
    return "ignored", None


def outcome_ok(case: Case, outcome: str) -> bool:
    return outcome in case.expect.split(" or ")
