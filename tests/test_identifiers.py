"""Identifier splitting for the keyword index of code (a pure function)."""

from __future__ import annotations

import pytest

from vaultsearch.store.derived.keywords import keyword_body
from vaultsearch.store.identifiers import identifier_words, split_identifier


@pytest.mark.parametrize(
    ("identifier", "words"),
    [
        ("parseHTTPResponse", ["parse", "http", "response"]),
        ("HTTPResponse", ["http", "response"]),
        ("XMLHttpRequest", ["xml", "http", "request"]),
        ("IOError", ["io", "error"]),
        ("get_userName", ["get", "user", "name"]),
        ("snake_case_name", ["snake", "case", "name"]),
        ("__init__", ["init"]),
        ("Base64Encoder", ["base64", "encoder"]),
        ("sha256", ["sha256"]),
        ("größeÄndern", ["größe", "ändern"]),
        ("ABC", ["abc"]),
        ("x", ["x"]),
    ],
)
def test_split_identifier(identifier: str, words: list[str]) -> None:
    assert split_identifier(identifier) == words


def test_identifier_words_lists_each_compound_identifier_once() -> None:
    code = "def loadUserProfile(key):\n    return parseHTTPResponse(key) or loadUserProfile(snake_case, value)\n"
    assert identifier_words(code) == "load user profile\nparse http response"
    assert identifier_words("x = snake_case + plain_words(y)") == ""


def test_only_code_gets_the_words_and_the_text_stays_whole() -> None:
    code = "const userName = fetchUserName();"
    assert keyword_body("code", code) == code + "\nuser name\nfetch user name"
    assert keyword_body("note", code) == code
    assert keyword_body("code", "x = 1") == "x = 1"
