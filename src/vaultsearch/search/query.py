"""Query text as a user types it, parsed by us so that nothing in it can break a search.

The supported operators are few and forgiving: ``"exact phrase"``, ``-excluded``,
``tag:x`` and ``path:x``. Everything else, ``C++``, ``(``, ``:`` and stray quotes
included, is just text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vaultsearch.search.stopwords import STOPWORDS, content_words

_WORD = re.compile(r"\w+", re.UNICODE)
_TOKEN = re.compile(r'(?i:(tag|path)):"([^"]*)"|(-?)"([^"]*)"|(\S+)')


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    text: str
    """What the semantic search embeds: the query without its operators."""
    terms: tuple[str, ...] = ()
    phrases: tuple[tuple[str, ...], ...] = ()
    excluded: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.terms or self.phrases)

    @property
    def keyword_terms(self) -> tuple[str, ...]:
        """The loose words BM25 scores: function words dropped (phrases keep theirs)."""
        if self.phrases:
            return tuple(w for w in self.terms if w.lower() not in STOPWORDS)
        return content_words(self.terms)

    @property
    def highlight_terms(self) -> tuple[str, ...]:
        words = list(self.terms)
        for p in self.phrases:
            words.extend(p)
        return tuple(dict.fromkeys(w.lower() for w in words))


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def parse_query(query: str) -> ParsedQuery:
    if query.count('"') % 2:
        query = query.replace('"', " ")
    text_parts: list[str] = []
    terms: list[str] = []
    phrases: list[tuple[str, ...]] = []
    excluded: list[str] = []
    tags: list[str] = []
    paths: list[str] = []
    for m in _TOKEN.finditer(query):
        operator, quoted, negated, phrase, token = m.groups()
        if operator is not None:  # path:"Team Notes": the quotes hold the value together
            if quoted.strip():
                (tags if operator.lower() == "tag" else paths).append(quoted.strip().lstrip("#"))
            continue
        if phrase is not None:
            ws = tuple(words(phrase))
            if negated:
                excluded.extend(ws)
            elif len(ws) == 1:
                terms.extend(ws)
                text_parts.append(phrase)
            elif ws:
                phrases.append(ws)
                text_parts.append(phrase)
            continue
        lowered = token.lower()
        if lowered.startswith("tag:") and len(token) > 4:
            tags.append(token[4:].lstrip("#"))
        elif lowered.startswith("path:") and len(token) > 5:
            paths.append(token[5:])
        elif token.startswith("-") and len(token) > 1 and words(token[1:]):
            excluded.extend(words(token[1:]))
        else:
            terms.extend(words(token))
            text_parts.append(token)
    return ParsedQuery(
        " ".join(text_parts).strip(),
        tuple(terms),
        tuple(phrases),
        tuple(excluded),
        tuple(tags),
        tuple(paths),
    )
