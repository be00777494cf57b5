"""A code chunk's sentence units are its docstrings and comments (``parsers/codeprose``):
the prose that says in words what the code does, embedded alone."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import WriteVault
from vaultsearch import Vault
from vaultsearch.embedding.embedder import Embedder
from vaultsearch.parsers.codeprose import code_prose
from vaultsearch.parsers.sentences import unit_texts

PYTHON = '''\
def max_edits(word: str) -> int:
    """Edit distance allowed by length: short words have too many neighbours.

    A second paragraph of the docstring
    runs over two lines.
    """
    # count the letters of the word first
    n = len(word)
    sql = """SELECT the words FROM a table"""
    return 0 if n < 4 else 2  # a trailing remark on this line
'''

PYTHON_UNITS = [
    "Edit distance allowed by length: short words have too many neighbours.",
    "A second paragraph of the docstring runs over two lines.",
    "count the letters of the word first",
]

JAVASCRIPT = """\
/**
 * Adds two numbers together and returns the sum.
 * @param a the first number
 */
function add(a, b) {
  // the plus sign does all of the work
  return a + b; // trailing words are not prose units
}
/* a closed block comment on one line */
#include <stdio.h>
"""


def test_docstrings_and_comment_lines_are_the_prose() -> None:
    assert code_prose(PYTHON).split("\n\n") == [
        "Edit distance allowed by length: short words have too many neighbours.",
        "A second paragraph of the docstring\nruns over two lines.",
        "count the letters of the word first",
    ]
    assert unit_texts(PYTHON, "code") == PYTHON_UNITS


def test_block_and_line_comments_of_other_languages() -> None:
    assert unit_texts(JAVASCRIPT, "code") == [
        "Adds two numbers together and returns the sum. @param a the first number",
        "the plus sign does all of the work",
        "a closed block comment on one line",
    ]


def test_code_alone_has_no_units_and_prose_notes_are_unchanged() -> None:
    assert unit_texts("def f(x):\n    return x + 1  # add one to it\n", "code") == []
    assert unit_texts('x = """not a docstring at all here"""\n', "code") == []
    prose = "# Heading of it\n\nPlain prose with a few words. # not a comment here"
    assert unit_texts(prose, "note") == [
        "Heading of it",
        "Plain prose with a few words. # not a comment here",
    ]


def test_a_code_hit_scores_its_best_docstring_sentence(
    write_vault: WriteVault, embedder: Embedder
) -> None:
    root = write_vault(
        {
            "fuzzy.py": PYTHON,
            "Typos.md": "# Typos\n\nA misspelt word is matched to a close word of the index.\n",
        }
    )
    query = "how many typos are tolerated in a word depending on its length"
    with Vault.open(root) as vault:
        vault.index()
        hits = vault.search(query, mode="semantic", explain=True)
    hit = next(h for h in hits if h.path == "fuzzy.py")
    assert hit.explain is not None and hit.qualified_name == "fuzzy.max_edits"
    parts = {p.branch: p.raw for p in hit.explain.branches}
    q = embedder.embed_query(query)
    units = embedder.embed_texts(PYTHON_UNITS)
    best = max(float(u @ q / np.linalg.norm(u) / np.linalg.norm(q)) for u in units)
    assert parts["sentences"] == pytest.approx(best, abs=2e-3)
    assert parts["sentences"] > parts["semantic"] + 0.05  # the docstring alone says it better
