"""LLM query expansion (``search.expand``, off by default): a chat endpoint rewrites the
query a few ways and writes a short passage that would answer it; the orchestrator
searches each and fuses them with the query's own branches.

Why a hypothetical passage: a question and its answer are worded differently, and a
passage written like the answer lands nearer the answer's vector than the question
does. Why only ever beside the typed query: a rewrite can drift, so it adds evidence
at ``expand_weight`` and never replaces what the user asked.

Answers are cached per query in memory (bounded), so paging through results or an
agent repeating a query asks the model once; failures are not cached.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

from vaultsearch.config import SearchConfig
from vaultsearch.embedding.endpoint import Endpoint, EndpointError

CACHE_SIZE = 256
MAX_REWRITE_CHARS = 300
MAX_PASSAGE_CHARS = 1200
SYSTEM = (
    "You help a search engine over a person's notes. For the user's query, answer with "
    "one JSON object and nothing else: "
    '{"rewrites": [up to COUNT other short phrasings of the same query, using other words '
    'for the same things], "passage": "two or three sentences written the way a note '
    'that answers the query would be written"}. Do not answer in any other form.'
)
_OPERATORS = re.compile(r'"|(?:^|(?<=\s))-|\b(?:tag|path):', re.IGNORECASE)


@dataclass(frozen=True)
class Expansion:
    rewrites: tuple[str, ...]
    passage: str

    def queries(self) -> list[tuple[str, str]]:
        """(label, text) of each query to search: ``1``.. for rewrites, ``p`` for the passage."""
        out = [(str(i), r) for i, r in enumerate(self.rewrites, 1)]
        return out + ([("p", self.passage)] if self.passage else [])

    def shown(self) -> tuple[str, ...]:
        return (*self.rewrites, *((f"passage: {self.passage}",) if self.passage else ()))


class QueryExpander:
    def __init__(self, config: SearchConfig) -> None:
        self._model = config.expand_model
        self._count = config.expand_rewrites
        self._endpoint = Endpoint(
            url=config.expand_url,
            what="query expansion",
            key="search.expand_url",
            api_key_env=config.expand_api_key_env,
            timeout=config.model_timeout,
            retries=1,
        )
        self._cache: OrderedDict[str, Expansion] = OrderedDict()
        self._lock = threading.Lock()

    def expand(self, query: str) -> Expansion:
        """The rewrites and passage for ``query``, or an ``EndpointError``."""
        key = " ".join(query.split())
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        answer = self._endpoint.post(
            "chat/completions",
            {
                "model": self._model,
                "temperature": 0,
                "messages": [
                    {"role": "system", "content": SYSTEM.replace("COUNT", str(self._count))},
                    {"role": "user", "content": f"Query: {key}"},
                ],
            },
        )
        found = _parse(answer, key, self._count, self._endpoint.url)
        with self._lock:
            self._cache[key] = found
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return found


def searchable(text: str) -> str:
    """A rewrite as plain words: an operator the model wrote (``-word``, ``tag:x``,
    quotes) must not exclude or filter what the user did not."""
    return " ".join(_OPERATORS.sub(" ", text).split())


def _parse(answer: object, query: str, count: int, url: str) -> Expansion:
    try:
        content = str(answer["choices"][0]["message"]["content"])  # type: ignore[index]
        start, end = content.index("{"), content.rindex("}") + 1
        data = json.loads(content[start:end])
        rewrites, passage = data.get("rewrites", []), data.get("passage", "")
        if not isinstance(rewrites, list) or not isinstance(passage, str):
            raise TypeError
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        raise EndpointError(
            f"The query expansion endpoint {url} did not answer with the JSON object "
            "asked for (rewrites and passage).",
            fix="set search.expand_model to an instruction-following chat model, or "
            "search.expand = false",
        ) from None
    seen = {query.casefold()}
    kept = []
    for r in rewrites:
        text = searchable(str(r))[:MAX_REWRITE_CHARS]
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            kept.append(text)
    return Expansion(tuple(kept[:count]), searchable(passage)[:MAX_PASSAGE_CHARS])
