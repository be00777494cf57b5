"""The template library: shipped templates, the vault's overrides, and what each expects.

A template is a Jinja2 file whose first lines are a comment holding YAML front matter
(a description, the required variables and a sentence per variable), so one file says
both how a report looks and how to fill it. The variables listed to an agent are the
ones the template really uses (``jinja2.meta``); the front matter only describes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from vaultsearch.errors import QueryError

if TYPE_CHECKING:  # Jinja2 loads with the first template: an idle server never needs it
    from jinja2.sandbox import SandboxedEnvironment

    from vaultsearch.config import ReportsConfig

SHIPPED = Path(__file__).parent / "templates"
SUFFIX = ".md.j2"
OVERRIDES = Path(".vaultsearch") / "templates"
"""Inside the vault: ``<vault>/.vaultsearch/templates/<name>.md.j2``."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_FRONT = re.compile(r"\A\{#-?\s*---\s*\n(.*?)\n---\s*-?#\}[ \t]*\n?", re.S)


@dataclass(frozen=True, slots=True)
class Variable:
    name: str
    description: str
    required: bool


@dataclass(frozen=True, slots=True)
class TemplateInfo:
    name: str
    description: str
    origin: str
    """``shipped`` or the vault-relative path of the override."""
    variables: tuple[Variable, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "origin": self.origin,
            "variables": {
                v.name: {"description": v.description, "required": v.required}
                for v in self.variables
            },
        }


@cache
def environment() -> SandboxedEnvironment:
    """For parsing only (rendering is ``reports.sandbox``'s, in a child process).

    Jinja finds the variables a template uses with its code generator, which folds
    constant expressions as it goes: ``{{ 2 ** 10 ** 10 }}`` or ``{{ "a" | center(10 **
    9) }}`` would be computed here, in the server, before any render (it took 16 GB).
    So every operator is intercepted and every filter and test takes the context, which
    Jinja never folds; their names stay, so an unknown filter is still an error."""
    from jinja2 import pass_context
    from jinja2.sandbox import SandboxedEnvironment

    @pass_context
    def unfoldable(*args: Any, **kwargs: Any) -> None:
        return None

    env = SandboxedEnvironment(
        autoescape=False, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True
    )
    env.intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})
    env.intercepted_unops = frozenset({"+", "-", "not"})
    env.filters = dict.fromkeys(env.filters, unfoldable)
    env.tests = dict.fromkeys(env.tests, unfoldable)
    return env


def check_name(name: str) -> str:
    cleaned = name.strip().removesuffix(SUFFIX)
    if not _NAME.match(cleaned):
        raise QueryError(
            f"{name!r} is not a template name; use letters, digits, '-' and '_', "
            "e.g. 'basic', 'paper' or 'bullet_points'."
        )
    return cleaned


def names(vault_root: Path) -> list[str]:
    found = {p.name.removesuffix(SUFFIX) for p in SHIPPED.glob("*" + SUFFIX)}
    folder = vault_root / OVERRIDES
    if folder.is_dir():
        found |= {p.name.removesuffix(SUFFIX) for p in folder.glob("*" + SUFFIX) if p.is_file()}
    return sorted(n for n in found if _NAME.match(n))


def source(vault_root: Path, name: str) -> tuple[str, str]:
    """(template text, origin): the vault's override first, then the shipped one."""
    name = check_name(name)
    override = vault_root / OVERRIDES / (name + SUFFIX)
    if override.is_file():
        return override.read_text(encoding="utf-8"), (OVERRIDES / (name + SUFFIX)).as_posix()
    shipped = SHIPPED / (name + SUFFIX)
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8"), "shipped"
    raise QueryError(
        f"There is no template {name!r}; templates: {', '.join(names(vault_root))} "
        f"(add your own as {OVERRIDES.as_posix()}/{name}{SUFFIX} in the vault)."
    )


def front_matter(text: str) -> dict[str, Any]:
    m = _FRONT.match(text)
    if m is None:
        return {}
    try:
        data = yaml.safe_load(m[1])
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def info(vault_root: Path, name: str) -> TemplateInfo:
    text, origin = source(vault_root, name)
    fm = front_matter(text)
    import jinja2
    from jinja2 import meta

    try:
        used = meta.find_undeclared_variables(environment().parse(text))
    except jinja2.TemplateSyntaxError as exc:
        raise QueryError(
            f"Template {name!r} ({origin}) line {exc.lineno}: {(exc.message or '').rstrip('.')}."
        ) from None
    except RecursionError:
        raise QueryError(
            f"Template {name!r} ({origin}) nests its expressions too deep to be read."
        ) from None
    # only strings are read from the front matter: a YAML alias bomb is cheap as long
    # as nobody turns its shared lists into text
    raw = fm.get("variables")
    pairs = raw.items() if isinstance(raw, dict) else ()
    described = {k: v if isinstance(v, str) else "" for k, v in pairs if isinstance(k, str)}
    listed = fm.get("required")
    required = {r for r in listed if isinstance(r, str)} if isinstance(listed, list) else set()
    order = [*described, *sorted(used - set(described))]
    variables = tuple(
        Variable(v, described.get(v, ""), v in required)
        for v in order
        if v in used or v in required
    )
    description = fm.get("description")
    return TemplateInfo(
        check_name(name), description if isinstance(description, str) else "", origin, variables
    )


def render(
    vault_root: Path,
    name: str,
    variables: dict[str, Any],
    limits: ReportsConfig | None = None,
) -> str:
    """The report text; missing required variables, template errors and a template
    over its time, memory or output budget are refused in one sentence naming them."""
    from vaultsearch.reports.sandbox import render_in_child

    text, origin = source(vault_root, name)
    about = info(vault_root, name)
    missing = [v.name for v in about.variables if v.required and v.name not in variables]
    if missing:
        raise QueryError(
            f"Template {about.name!r} needs the variable(s) {', '.join(missing)}; "
            "get_template_schema lists what each is."
        )
    if limits is None:
        from vaultsearch.config import ReportsConfig

        limits = ReportsConfig()
    rendered, refused = render_in_child(
        _FRONT.sub("", text, count=1),
        variables,
        vault_root / OVERRIDES,
        f"Template {about.name!r} ({origin})",
        limits.render_timeout,
        limits.max_output_bytes,
    )
    if rendered is None:
        raise QueryError(refused or f"Template {about.name!r} ({origin}) was not rendered.")
    return rendered
