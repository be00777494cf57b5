"""A git source's url and branch are data: values git could read as an option, a
remote helper or a refspec trick are refused before any git command sees them.

The branch rules are git's own (``git check-ref-format --branch``) written out, so a
config file is checked without starting a process; ``gitsource`` asks git itself
again before each run. The url is held to an allow-list of transports: ``ext::`` and
``fd::`` run programs or read file descriptors, and option-shaped values (a leading
``-``) are how a value becomes a command line switch.
"""

from __future__ import annotations

import re

URL_FORMS = "https://, ssh://, file://, user@host:path or a local path"
_SCHEMES = ("https", "ssh", "git+ssh", "ssh+git", "file")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_SCP = re.compile(r"(?:([^@/:]+)@)?([^/:]*):")
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*")
_BRANCH_CHARS = frozenset(" ~^:?*[\\")


def _control(text: str) -> bool:
    return any(ord(c) < 32 or ord(c) == 127 for c in text)


def branch_problem(branch: str) -> str | None:
    """Why git would refuse ``branch`` as a branch name, or read it as something else;
    None for a name it takes as it is."""
    if branch.startswith("-"):
        return "it starts with '-', so git would read it as an option"
    if branch.startswith("+"):
        return "it starts with '+', which a fetch reads as 'force'"
    if _control(branch) or _BRANCH_CHARS & set(branch):
        return "it holds a space, a control character or one of ~ ^ : ? * [ \\"
    if branch in ("HEAD", "@") or "@{" in branch:
        return "it names a revision ('HEAD', '@' or '@{…}'), not a branch"
    if ".." in branch or "//" in branch or branch.startswith("/") or branch.endswith(("/", ".")):
        return "it holds '..' or '//', or starts or ends with '/' or ends with '.'"
    if any(part.startswith(".") or part.endswith(".lock") for part in branch.split("/")):
        return "a part of it starts with '.' or ends with '.lock'"
    return None


def url_problem(url: str) -> str | None:
    """Why ``url`` is not one of the transports a source may use, or None."""
    if _control(url):
        return "it holds a control character"
    if url.startswith("-"):
        return "it starts with '-', so git would read it as an option"
    if "::" in url:
        return "'<transport>::<address>' runs a git remote helper (ext::, fd::, …)"
    scheme = _SCHEME.match(url)
    if scheme:
        name = scheme.group(1).lower()
        if name not in _SCHEMES:
            return f"the '{name}://' transport is not allowed"
        authority = url[scheme.end() :].partition("/")[0]
        host = authority.rpartition("@")[2] if name != "file" else ""
        if host.startswith("-") or (name != "file" and authority.startswith("-")):
            return "its user or host starts with '-', so ssh would read it as an option"
        return None
    scp = _SCP.match(url)
    if scp and not _HOST.fullmatch(scp.group(2)):
        return "'host:path' needs a host name of letters, digits, '.' and '-'"
    if scp and scp.group(1) is not None and scp.group(1).startswith("-"):
        return "its user name starts with '-', so ssh would read it as an option"
    return None
