"""Progress of an indexing run: a rich bar on a terminal, plain log lines elsewhere.

Files advance in fractions while their chunks are embedded (the indexer credits each
model call its share of the batch's files), so the bar, the rate and the ETA move
during a first build instead of jumping once per committed batch. The texts the bar
counts are what the model embeds (chunks and their sentences alike), so it says
"texts embedded", never "chunks": what the index holds is the one line of
``IndexCounts`` it prints when the run is published.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Protocol, TextIO

if TYPE_CHECKING:
    from rich.progress import TaskID

    from vaultsearch.store.counts import IndexCounts


class Progress(Protocol):
    def start(self, files: int) -> None: ...
    def advance(self, files: float = 0, chunks: int = 0) -> None: ...
    def finish(self) -> None: ...


def working_on(progress: Progress, path: str, chunks: int = 0) -> None:
    """Tell a display that shows it which file is being parsed or embedded, and how many
    more chunks are now known to need the model; an optional hook, so every
    ``Progress`` need not implement it."""
    hook = getattr(progress, "working_on", None)
    if hook is not None:
        hook(path, chunks)


def enter_stage(progress: Progress, stage: int, what: str) -> None:
    """Tell a display which stage of a build the run is in (1: chunks, keywords and
    links, searchable as they are published; 2: sentence vectors); optional too."""
    hook = getattr(progress, "stage", None)
    if hook is not None:
        hook(stage, what)


def show_counts(progress: Progress, counts: IndexCounts) -> None:
    """Tell a display what the published index now holds; optional like ``working_on``."""
    hook = getattr(progress, "indexed", None)
    if hook is not None:
        hook(counts)


class SilentProgress:
    def start(self, files: int) -> None:
        pass

    def advance(self, files: float = 0, chunks: int = 0) -> None:
        pass

    def finish(self) -> None:
        pass


class LogProgress:
    """For CI logs and pipes: a line every few seconds, never a redraw."""

    def __init__(self, stream: TextIO = sys.stderr, every: float = 5.0) -> None:
        self.stream, self.every = stream, every
        self.chunks = self.total = 0
        self.files = 0.0
        self.t0 = self.last = 0.0
        self.in_stage = 0

    def start(self, files: int) -> None:
        self.total, self.t0 = files, time.monotonic()
        self.last, self.files, self.chunks = self.t0, 0.0, 0
        what = "notes to add sentence vectors to" if self.in_stage == 2 else "changed files"
        print(f"indexing {files} {what}", file=self.stream, flush=True)

    def advance(self, files: float = 0, chunks: int = 0) -> None:
        self.files += files
        self.chunks += chunks
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            rate = self.chunks / max(now - self.t0, 1e-9)
            print(
                f"  {self.files:.0f}/{self.total} files, {self.chunks} texts embedded, "
                f"{rate:.1f} texts/s",
                file=self.stream,
                flush=True,
            )

    def finish(self) -> None:
        pass

    def stage(self, stage: int, what: str) -> None:
        self.in_stage = stage
        print(f"stage {stage}: {what}", file=self.stream, flush=True)

    def indexed(self, counts: IndexCounts) -> None:
        print(f"index: {counts.line()}", file=self.stream, flush=True)


class RichProgress:
    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichBar

        self.bar = RichBar(
            TextColumn("[bold]indexing"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(
                "files · {task.fields[chunks]} texts embedded · {task.fields[rate]:.1f} texts/s"
            ),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self.task: TaskID | None = None
        self.chunks = 0
        self.t0 = 0.0

    def start(self, files: int) -> None:
        self.t0 = time.monotonic()
        self.bar.start()
        self.task = self.bar.add_task("index", total=files, chunks=0, rate=0.0)

    def advance(self, files: float = 0, chunks: int = 0) -> None:
        self.chunks += chunks
        rate = self.chunks / max(time.monotonic() - self.t0, 1e-9)
        if self.task is not None:
            self.bar.update(self.task, advance=files, chunks=self.chunks, rate=rate)

    def finish(self) -> None:
        self.bar.stop()

    def stage(self, stage: int, what: str) -> None:
        self.bar.console.print(f"stage {stage}: {what}", highlight=False)

    def indexed(self, counts: IndexCounts) -> None:
        self.bar.console.print(f"index: {counts.line()}", highlight=False)


def default_progress(quiet: bool = False) -> Progress:
    if quiet:
        return SilentProgress()
    return RichProgress() if sys.stderr.isatty() else LogProgress()
