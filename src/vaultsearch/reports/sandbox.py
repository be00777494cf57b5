"""Rendering a template in a child process that is killed when it runs over.

Jinja2's sandbox keeps a template away from Python's internals, but not from the CPU
or the memory: nested ``range(100000)`` loops, a string doubled in a loop or
``2 ** 10 ** 9`` run in C or in compiled template code that no hook sees, and a thread
cannot be stopped. So a report is rendered in a child process with an address-space
limit and a deadline, and the server's thread only waits for it; whatever the template
does, the call ends with one sentence and the next call finds the server as it was.
Templates can include, import or extend only templates of the vault's template folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from vaultsearch._limits import child_command, limit_address_space
from vaultsearch._readable import readable

RENDER_MEMORY_MB = 256
"""What a render may add to the child after its imports: far above any report."""
_START_TIMEOUT = 120.0
_READY = b"R"


def render_in_child(
    body: str,
    variables: dict[str, Any],
    folder: Path,
    about: str,
    timeout: float,
    max_bytes: int,
) -> tuple[str | None, str | None]:
    """(the text, None), or (None, the sentence that says why there is none).
    ``about`` names the template in that sentence, e.g. ``Template 'x' (shipped)``."""
    request = {"body": body, "variables": variables, "folder": str(folder), "max": max_bytes}
    argv, env = child_command("vaultsearch.reports.sandbox", str(RENDER_MEMORY_MB))
    try:
        child = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
    except OSError as exc:
        return None, f"{about} could not be rendered: no render process ({exc})."
    with child:
        try:
            _wait_ready(child)
            out, err = child.communicate(
                json.dumps(request, default=str).encode("utf-8"), timeout=timeout
            )
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            return None, (
                f"{about} ran longer than reports.render_timeout ({timeout:g} s) allows; "
                "rendering was stopped (a loop without end, or loops nested too deep?)."
            )
        except (TimeoutError, OSError):
            child.kill()
            child.communicate()
            return None, f"{about} could not be rendered: the render process did not start."
    try:
        reply = json.loads(out.decode("utf-8"))
    except ValueError:
        if child.returncode == -9 or b"MemoryError" in err:
            return None, _over_memory(about)
        return None, f"{about} stopped the render process (exit {child.returncode})."
    if "text" in reply:
        return str(reply["text"]), None
    return None, f"{about} {reply['error']}"


def _wait_ready(child: subprocess.Popen[bytes]) -> None:
    """The budget is the render's: the child's start (a cold interpreter, a loaded
    machine) is only guarded against a hang."""
    assert child.stdout is not None
    fd = child.stdout.fileno()
    if not readable(fd, _START_TIMEOUT) or os.read(fd, 1) != _READY:
        raise TimeoutError


def _over_memory(about: str) -> str:
    return f"{about} needed more than {RENDER_MEMORY_MB} MB to render; rendering was stopped."


# --- the child ------------------------------------------------------------------------
def _environment(folder: str) -> Any:
    from jinja2 import FileSystemLoader, TemplateNotFound
    from jinja2.sandbox import SandboxedEnvironment

    class FolderLoader(FileSystemLoader):
        """A template of the folder, never one a link inside it leads out to."""

        def get_source(self, environment: Any, template: str) -> Any:
            source, filename, uptodate = super().get_source(environment, template)
            real, top = Path(filename).resolve(), Path(folder).resolve()
            if not real.is_relative_to(top):
                raise TemplateNotFound(template)
            return source, filename, uptodate

    return SandboxedEnvironment(
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        loader=FolderLoader(folder, followlinks=False),
    )


def _render(request: dict[str, Any]) -> dict[str, str]:
    import jinja2

    folder = request["folder"]
    try:
        template = _environment(folder).from_string(request["body"])
        parts: list[str] = []
        size = 0
        for part in template.generate(**request["variables"]):
            parts.append(part)
            size += len(part.encode("utf-8"))
            if size > request["max"]:
                return {
                    "error": f"wrote more than reports.max_output_bytes ({request['max']:,} "
                    "bytes); rendering was stopped."
                }
        return {"text": "".join(parts)}
    except jinja2.TemplateNotFound as exc:
        return {
            "error": f"cannot include, import or extend {exc.name!r}: only templates in the "
            "vault's .vaultsearch/templates/ folder can be."
        }
    except jinja2.exceptions.SecurityError as exc:
        return {"error": f"is not allowed to: {str(exc).rstrip('.')}."}
    except jinja2.TemplateError as exc:
        return {"error": f"failed: {str(exc).rstrip('.')}."}
    except RecursionError:
        return {
            "error": "calls itself without end (a macro that calls itself, or templates "
            "that include each other); rendering was stopped."
        }
    except MemoryError:
        raise
    except Exception as exc:
        detail = str(exc).splitlines()[0][:200] if str(exc) else ""
        return {"error": f"failed: {type(exc).__name__}: {detail}."}


def _main(memory_mb: int) -> None:
    import jinja2.sandbox  # noqa: F401  (imported before the limit is measured)

    limit_address_space(memory_mb)
    sys.stdout.buffer.write(_READY)
    sys.stdout.buffer.flush()
    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    try:
        reply = _render(request)
    except MemoryError:
        reply = None
    if reply is None:
        sys.stderr.write("MemoryError\n")
        sys.exit(3)
    sys.stdout.buffer.write(json.dumps(reply).encode("utf-8"))


if __name__ == "__main__":
    _main(int(sys.argv[1]))
