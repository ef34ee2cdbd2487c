"""The progress display of the command line (world generation, rendering, training).

On a terminal it is one bar redrawn in place; anywhere else (a log file, a batch job's
output, a pipe) it prints a plain line every `interval_s` seconds and one at the end, so
that a log holds readable lines instead of carriage returns.

    bar = Progress(total=1000, unit="steps")
    for done in ...:
        bar.update(done, "return 1.25")
    bar.close()
"""

from __future__ import annotations

import sys
import time

BAR_WIDTH = 24
BAR_REDRAW_S = 0.2  # a terminal bar redraws at most this often
LINE_INTERVAL_S = 30.0  # a non-terminal stream gets a line at most this often


def format_duration(seconds: float) -> str:
    """12 s, 4.5 min, 2.3 h; "?" when unknown."""
    if seconds != seconds or seconds == float("inf"):
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def format_count(n: float) -> str:
    """999, 12.3k, 4.5M, 1.00B: a step count at a glance."""
    n = float(n)
    for scale, suffix, digits in ((1e9, "B", 2), (1e6, "M", 1), (1e3, "k", 1)):
        if abs(n) >= scale:
            return f"{n / scale:.{digits}f}{suffix}"
    return f"{n:.0f}"


class Progress:
    """Progress towards `total` units, from `start` (a resumed job's units already done).
    `stream` defaults to stderr; `terminal` to whether the stream is a TTY."""

    def __init__(self, total: int, unit: str, *, start: int = 0, stream=None, terminal: bool | None = None,
                 interval_s: float = LINE_INTERVAL_S):
        self.total, self.unit, self.start_done = max(int(total), 1), unit, int(start)
        self.stream = sys.stderr if stream is None else stream
        if terminal is None:
            isatty = getattr(self.stream, "isatty", None)
            terminal = bool(isatty and isatty())
        self.terminal = terminal
        self.interval_s = BAR_REDRAW_S if terminal else interval_s
        self.t0 = time.perf_counter()
        self.last_shown: float | None = None
        self.pending: tuple[int, str] | None = None  # the latest update not shown yet
        self.drawn = False

    def update(self, done: int, detail: str = "", force: bool = False) -> None:
        now = time.perf_counter()
        if not force and self.last_shown is not None and now - self.last_shown < self.interval_s:
            self.pending = (done, detail)
            return
        self.last_shown = now
        self.pending = None
        self._show(done, detail, now)

    def _show(self, done: int, detail: str, now: float) -> None:
        elapsed = max(now - self.t0, 1e-9)
        rate = (done - self.start_done) / elapsed
        eta = (self.total - done) / rate if rate > 0 else float("inf")
        text = (f"{done:,}/{self.total:,} {self.unit} {rate:,.0f} {self.unit}/s, "
                f"{format_duration(elapsed)} elapsed, ETA {format_duration(eta)}")
        if detail:
            text += f" | {detail}"
        if self.terminal:
            fill = min(BAR_WIDTH, int(BAR_WIDTH * done / self.total))
            self.stream.write(f"\r[{'#' * fill}{'.' * (BAR_WIDTH - fill)}] {text} ")
            self.drawn = True
        else:
            self.stream.write(f"{100 * done / self.total:5.1f}% {text}\n")
        self.stream.flush()

    def close(self) -> None:
        """Show the last update if it was held back, and end the bar's line."""
        if self.pending is not None:
            self._show(*self.pending, time.perf_counter())
            self.pending = None
        if self.terminal and self.drawn:
            self.stream.write("\n")
            self.stream.flush()
