"""An answer written by a local OpenAI-compatible chat endpoint (``[answer] endpoint``).

Off by default. The model sees only the numbered passages the search found and is told
to cite them as [n]; the citations returned are the passages it cited. Any failure is
an ``AnswerEndpointError`` in one sentence, and the caller answers extractively.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from vaultsearch.config import AnswerConfig
from vaultsearch.errors import VaultsearchError
from vaultsearch.models import Hit
from vaultsearch.search.extractive import Answer, Citation

MAX_PASSAGES = 5
SYSTEM = (
    "Answer the question using only the numbered passages from the user's notes. "
    "Cite every statement with the passage number in brackets, like [1]. "
    "If the passages do not answer it, say so in one sentence."
)
_CITE = re.compile(r"\[(\d+)\]")


class AnswerEndpointError(VaultsearchError):
    pass


def chat_request(query: str, hits: Sequence[Hit], model: str) -> dict[str, Any]:
    passages = "\n\n".join(
        f"[{n}] {h.path}, lines {h.start_line}-{h.end_line}:\n{h.snippet}"
        for n, h in enumerate(hits[:MAX_PASSAGES], 1)
    )
    return {
        "model": model,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Question: {query}\n\nPassages:\n\n{passages}"},
        ],
    }


def chat_answer(config: AnswerConfig, query: str, hits: Sequence[Hit]) -> Answer:
    url = config.endpoint.rstrip("/") + "/chat/completions"
    body = json.dumps(chat_request(query, hits, config.model)).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # a local service
    try:
        with opener.open(request, timeout=config.timeout) as response:
            data = json.loads(response.read())
        text = str(data["choices"][0]["message"]["content"]).strip()
    except urllib.error.HTTPError as exc:
        raise AnswerEndpointError(f"The answer endpoint {url} answered HTTP {exc.code}.") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise AnswerEndpointError(f"The answer endpoint {url} is unreachable ({reason}).") from None
    except (ValueError, KeyError, IndexError, TypeError):
        raise AnswerEndpointError(
            f"The answer endpoint {url} did not answer like an OpenAI chat completion."
        ) from None
    if not text:
        raise AnswerEndpointError(f"The answer endpoint {url} returned an empty answer.")
    shown = hits[:MAX_PASSAGES]
    cited = sorted({int(n) for n in _CITE.findall(text) if 1 <= int(n) <= len(shown)})
    return Answer(
        text,
        tuple(Citation(n, shown[n - 1].path, shown[n - 1].start_line, shown[n - 1].end_line)
              for n in cited),
    )  # fmt: skip
