"""Progress on stderr: a bar for runs, a bar for long steps, a spinner for the rest.

The run bar shows episodes done, successes with their Wilson band and an ETA; the step bar
(:func:`work`) shows episodes read or written of all (import, compare, show, report, export);
the spinner (:func:`busy`) the elapsed time of a step that cannot count its work.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING

from evalband.episode import EpisodeRecord, Outcome
from evalband.stats import interval

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["RunProgress", "busy", "work", "Work"]


class RunProgress:
    """Live progress for one run; silent when disabled (``--json``) or not a terminal."""

    def __init__(self, label: str, *, enabled: bool = True) -> None:
        self.label = label if len(label) <= 28 else label[:27] + "…"
        self.enabled = enabled and sys.stderr.isatty()
        self.successes = 0
        self.counted = 0
        self.errors = 0
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> RunProgress:
        if self.enabled:  # rich loads only for a live bar (~0.1 s)
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(bar_width=20),
                MofNCompleteColumn(),
                TextColumn("{task.fields[band]}"),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(compact=True),
                console=Console(stderr=True),
                transient=False,
            )
            self._progress.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.__exit__(exc_type, exc, tb)

    def _band(self) -> str:
        if self.counted == 0:
            return "successes -"
        band = interval(self.successes, self.counted)
        errors = f", [red]{self.errors} errors[/red]" if self.errors else ""
        return (
            f"ok {self.successes}/{self.counted} "
            f"[{100 * band.low:.0f}-{100 * band.high:.0f}%]{errors}"
        )

    def start(self, total: int, done: list[EpisodeRecord]) -> None:
        """Begin with ``total`` planned episodes, ``done`` already recorded (resume)."""
        for record in done:
            self._count(record)
        if self._progress is not None:
            self._task = self._progress.add_task(
                self.label, total=total, completed=len(done), band=self._band()
            )

    def note(self, text: str) -> None:
        """Print a warning line on stderr (above the live bar when there is one)."""
        line = f"warning: {text}"
        if self._progress is not None:
            self._progress.console.print(line, markup=False, highlight=False)
        else:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    def _count(self, record: EpisodeRecord) -> None:
        if record.outcome is Outcome.ERROR:
            self.errors += 1
            return
        self.counted += 1
        self.successes += record.success

    def advance(self, record: EpisodeRecord) -> None:
        """Count one committed episode."""
        self._count(record)
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=1, band=self._band())


class Work:
    """What a long step reports: ``update(done, total)`` moves its bar (see :func:`work`).

    Silent (nothing imported, nothing printed) when the bar is not shown.
    """

    def __init__(self, progress: Progress | None, task: TaskID | None) -> None:
        self._progress = progress
        self._task = task

    def update(self, done: int, total: int, label: str | None = None) -> None:
        """``done`` of ``total`` units (episodes) so far; ``label`` renames the step."""
        if self._progress is None or self._task is None:
            return
        self._progress.update(self._task, completed=done, total=max(total, 1),
                              description=label, count=f"{done:,}/{total:,}")

    def stage(self, label: str) -> Callable[[int, int], None]:
        """A ``progress(done, total)`` callback for one stage of the step, named ``label``."""
        return lambda done, total: self.update(done, total, label)


@contextmanager
def work(label: str, *, enabled: bool = True) -> Iterator[Work]:
    """A progress bar on stderr for one long step (episodes done of all, elapsed, time left).

    A spinner until the first :meth:`Work.update`, then the bar.

    Shown only on a terminal and when ``enabled`` (never with ``--json``, never in a pipe);
    otherwise nothing is imported or printed and :meth:`Work.update` does nothing.

    >>> with work("importing r.csv", enabled=False) as step:
    ...     step.update(10, 100)
    """
    if not (enabled and sys.stderr.isatty()):
        yield Work(None, None)
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=20),
        TextColumn("{task.fields[count]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(compact=True),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        yield Work(progress, progress.add_task(label, total=None, count=""))


@contextmanager
def busy(label: str, *, enabled: bool = True) -> Iterator[None]:
    """A transient spinner with the elapsed time on stderr while one long step runs.

    Shown only on a terminal and when ``enabled`` (never with ``--json``, never in a pipe);
    otherwise nothing is imported or printed.

    >>> with busy("importing r.csv", enabled=False):
    ...     pass
    """
    if not (enabled and sys.stderr.isatty()):
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        progress.add_task(label, total=None)
        yield
