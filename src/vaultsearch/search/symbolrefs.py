"""The reference gift: a docs passage that names a definition in backticks points at it.

In an index of docs pages and code, a plain-words description of a function matches the
docs page explaining it in prose better than the function, whose text is mostly
identifiers, so the page leads and the function comes several places below it
(``bench/mixed_code.py``). The page often names what it describes, the way prose names
code: ```slugify```, ```Cache.evict()```. Code files hold no links, so the link gifts
never reach them; this is the link a docs page has to the code. Each note of another
kind among the ``ref_top`` best gives ``ref_weight`` x its fused score to the code file
whose definition its scoring passages name, when exactly one candidate file defines
that name (a common name such as ``get`` or ``path`` is defined in several files, and
then it points nowhere). The gift is not bounded by the giver's source, as link gifts
are (``ranking.bound_gifts``): that it crosses sources is its point.

Only files already ranked take it (no file enters the ranking by a name alone), and
it does not choose which definition names the hit: a passage listing several
functions of one file cannot tell which of them was asked for, the branches can
(letting the named definition lead renamed 2 of the 40 bench queries' right hits).
An index with no code, or no other kind, gives none: its ranking cannot change.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from vaultsearch.search.ranking import Candidate, FusionSettings, FusionView

CODE = "code"
MODULE = "module"
"""The node type of a file's lines between its definitions: not a definition."""

_NAMED = re.compile(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:\(\))?`")
"""An inline code span holding one name (dotted parts allowed, ``()`` after it)."""


def named_symbols(text: str) -> list[str]:
    """The names ``text`` writes as inline code, in order, each once: ```slugify```,
    ```Cache.evict()```; a span with anything else (``--json``, ``a b``) names none."""
    return list(dict.fromkeys(_NAMED.findall(text)))


def dotted_tails(qualified: str) -> list[str]:
    """The names a definition is found by: its own and every dotted tail of its
    qualified name (``evict``, ``Cache.evict``, ``cache.Cache.evict``, ...)."""
    parts = qualified.split(".")
    return [".".join(parts[-k:]) for k in range(1, len(parts) + 1)]


def defined_names(
    note_ids: Sequence[int],
    known: dict[int, frozenset[str]],
    definitions: Callable[[list[int]], Iterable[tuple[int, str]]],
) -> dict[int, frozenset[str]]:
    """Note -> the names its definitions are found by, for ``note_ids``; those ``known``
    lacks are read through ``definitions`` (note id, qualified name) and kept there."""
    missing = [n for n in note_ids if n not in known]
    if missing:
        found: dict[int, set[str]] = {n: set() for n in missing}
        for nid, qualified in definitions(missing):
            found[nid].update(dotted_tails(qualified))
        known.update((n, frozenset(v)) for n, v in found.items())
    return {n: known[n] for n in note_ids}


def reference_gifts(
    ranked: Sequence[Candidate],
    view: FusionView,
    defines: Callable[[list[int]], Mapping[int, frozenset[str]]],
    passages: Callable[[Candidate], Iterable[str]],
    settings: FusionSettings,
) -> dict[int, tuple[float, str]]:
    """Code note -> (gift, path of the note whose passage names it), the largest gift.

    ``defines(code note ids)``: the names each one's definitions are found by
    (``defined_names``); ``passages(candidate)``: the texts of the chunks that scored it."""
    if settings.ref_weight <= 0 or not ranked:
        return {}
    code = [c.note_id for c in ranked if view.notes[c.note_id].kind == CODE]
    givers = [c for c in ranked[: settings.ref_top] if view.notes[c.note_id].kind != CODE]
    if not code or not givers:
        return {}
    named = {
        giver.note_id: dict.fromkeys(n for text in passages(giver) for n in named_symbols(text))
        for giver in givers
    }
    if not any(named.values()):
        return {}  # read no definitions when no passage names anything
    names = defines(code)
    out: dict[int, tuple[float, str]] = {}
    for giver in givers:
        gift = settings.ref_weight * max(giver.explain.fused, 0.0)
        for name in named[giver.note_id] if gift > 0 else ():
            files = [nid for nid in code if name in names[nid]]
            if len(files) != 1:
                continue
            nid = files[0]
            if gift > out.get(nid, (0.0, ""))[0]:
                out[nid] = (gift, view.notes[giver.note_id].path)
    return out
