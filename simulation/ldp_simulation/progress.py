"""Progress bars of the ``ldpcollect`` commands (tqdm), one per stage of a run.

A stage is named by its label ("car-demo: clients reporting", "mining itemsets", ...):
:meth:`ProgressBars.count` moves a bar with a known total, :meth:`ProgressBars.status`
shows what a stage without a total (a job polled on the aggregator) is doing. Functions
that take a ``progress`` argument accept ``None`` for no output.

tqdm comes with the demo extra; it is imported when :class:`ProgressBars` is made (before
a run starts), so that the :class:`Progress` protocol can be imported without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Never, Protocol

if TYPE_CHECKING:
    from tqdm import tqdm


class Progress(Protocol):
    """Where the simulations report how far they are."""

    def count(self, label: str, done: int, total: int) -> None:
        """``done`` of ``total`` units of stage ``label``."""

    def status(self, label: str, text: str) -> None:
        """What stage ``label`` (no known total) is doing now."""


class ProgressBars:
    """One tqdm bar per stage, on stderr; a bar closes when its stage is complete."""

    def __init__(self) -> None:
        from tqdm import tqdm

        self._tqdm = tqdm
        self._bars: dict[str, tqdm[Never]] = {}

    def _bar(self, label: str, total: int | None, unit: str) -> tqdm[Never]:
        if label not in self._bars:
            self._bars[label] = self._tqdm(
                total=total, desc=label, unit=unit, leave=True, dynamic_ncols=True
            )
        return self._bars[label]

    def count(self, label: str, done: int, total: int) -> None:
        bar = self._bar(label, total, "client")
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    def status(self, label: str, text: str) -> None:
        bar = self._bar(label, None, "poll")
        bar.set_postfix_str(text)
        bar.update(1)

    def close(self) -> None:
        """Close every bar still open (a stage that ended early)."""
        for bar in self._bars.values():
            bar.close()
