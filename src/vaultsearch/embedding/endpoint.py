"""One JSON POST to an OpenAI-compatible model server, with retries and one-sentence errors.

Shared by the embeddings backend, the rerank endpoint and query expansion, so every
route treats a refused key, a rate limit or a garbled answer alike. Standard library
only: the default install adds no HTTP client for a feature most users leave off.

Retried: timeouts, refused connections, HTTP 429 and 5xx, with exponential backoff
that honours ``Retry-After``. Not retried: other 4xx (a wrong key or URL does not get
better by asking again) and an answer that is not JSON.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from vaultsearch.errors import VaultsearchError

MAX_BACKOFF = 30.0
"""The longest wait between two tries, whatever ``Retry-After`` asks."""


class EndpointError(VaultsearchError):
    """A model server that cannot be used: unreachable, refusing, or answering nonsense."""


@dataclass(frozen=True)
class Endpoint:
    url: str
    """The API base, e.g. ``http://127.0.0.1:11434/v1``."""
    what: str
    """What it serves, for messages: ``embedding``, ``rerank``, ``query expansion``."""
    key: str = ""
    """The config key naming the URL, for fixes: ``embedding.url``."""
    api_key_env: str = ""
    timeout: float = 60.0
    retries: int = 4
    backoff: float = 0.5

    def headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key_env:
            value = os.environ.get(self.api_key_env, "")
            if not value:
                raise EndpointError(
                    f"The {self.what} endpoint needs an API key in ${self.api_key_env}, "
                    "which is not set.",
                    fix=f"export {self.api_key_env}=<key>, or leave its api_key_env empty "
                    "for a server without keys",
                )
            headers["Authorization"] = f"Bearer {value}"
        return headers

    def post(self, path: str, payload: dict[str, Any]) -> Any:
        """The decoded JSON answer of ``POST {url}/{path}``, or an ``EndpointError``."""
        url = self.url.rstrip("/") + "/" + path.lstrip("/")
        body = json.dumps(payload).encode("utf-8")
        headers = self.headers()
        # no proxy: the usual server is on this machine, and a proxy variable meant for
        # the package index must not send the vault's text elsewhere
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        tries = max(1, self.retries + 1)
        for attempt in range(tries):
            last = attempt == tries - 1
            request = urllib.request.Request(url, body, headers, method="POST")
            try:
                with opener.open(request, timeout=self.timeout) as response:
                    raw = response.read()
            except urllib.error.HTTPError as exc:
                status, wait = exc.code, _retry_after(exc)
                exc.close()
                if status in (401, 403):
                    raise self._refused(url, status) from None
                if status != 429 and status < 500:
                    raise EndpointError(
                        f"The {self.what} endpoint {url} answered HTTP {status}.",
                        fix=f"check {self.key or 'the URL'} (the API base, ending in /v1) "
                        "and the model name",
                    ) from None
                if last:
                    raise self._gave_up(url, f"HTTP {status}", tries) from None
                time.sleep(min(MAX_BACKOFF, wait if wait is not None else self._delay(attempt)))
                continue
            except (TimeoutError, urllib.error.URLError, OSError) as exc:
                if last:
                    raise self._unreachable(url, exc, tries) from None
                time.sleep(self._delay(attempt))
                continue
            try:
                return json.loads(raw)
            except ValueError:
                raise EndpointError(
                    f"The {self.what} endpoint {url} did not answer with JSON ({raw[:60]!r}...).",
                    fix=f"check that {self.key or 'the URL'} points at an OpenAI-compatible API",
                ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _delay(self, attempt: int) -> float:
        return min(MAX_BACKOFF, self.backoff * (2**attempt))

    def _refused(self, url: str, status: int) -> EndpointError:
        where = f"${self.api_key_env}" if self.api_key_env else "no key (api_key_env is empty)"
        return EndpointError(
            f"The {self.what} endpoint {url} refused the request with HTTP {status}: "
            f"the API key sent ({where}) is missing or not accepted.",
            fix="set api_key_env to the name of the variable that holds a valid key, "
            "and export that variable",
        )

    def _gave_up(self, url: str, answer: str, tries: int) -> EndpointError:
        return EndpointError(
            f"The {self.what} endpoint {url} still answered {answer} after {_tries(tries)}.",
            fix="wait and run it again (an interrupted index run resumes where it stopped), "
            "or raise the retries and lower the batch size",
        )

    def _unreachable(self, url: str, exc: BaseException, tries: int) -> EndpointError:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            return EndpointError(
                f"The {self.what} endpoint {url} did not answer within {self.timeout:g} s "
                f"({_tries(tries)}).",
                fix="raise the timeout, or check that the model server is not overloaded",
            )
        return EndpointError(
            f"The {self.what} endpoint {url} is unreachable ({reason}).",
            fix=f"start the model server, or set {self.key or 'the URL'} to where it listens",
        )


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    value = exc.headers.get("Retry-After") if exc.headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to the backoff


def _tries(n: int) -> str:
    return "1 try" if n == 1 else f"{n} tries"
