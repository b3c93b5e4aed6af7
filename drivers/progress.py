"""The short progress line of a long phase (training iterations): how far, how long still, the objective.

In a terminal the line carries a bar; otherwise (a log file, a scheduler) it is plain text. The estimate of the
time left is the mean time per step so far times the steps left. The detailed per-iteration figures are logged at
debug level (``-v``)."""
from __future__ import annotations

import sys

BAR_WIDTH = 20


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 07 min``."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def line(done: int, total: int, elapsed: float, what: str = "iteration", figure: str = "",
         terminal: bool | None = None) -> str:
    """``iteration 3/50 [###.......] 6%, 12 s, about 3 min 08 s left: ELBO -1.234e+06`` (no bar outside a
    terminal; no estimate before the first step ends)."""
    terminal = sys.stderr.isatty() if terminal is None else terminal
    share = done / total if total else 1.0
    bar = ""
    if terminal:
        filled = int(round(share * BAR_WIDTH))
        bar = f" [{'#' * filled}{'.' * (BAR_WIDTH - filled)}]"
    left = "" if done <= 0 or done >= total else f", about {duration(elapsed / done * (total - done))} left"
    return f"{what} {done}/{total}{bar} {share:.0%}, {duration(elapsed)}{left}" + (f": {figure}" if figure else "")


#: seconds between two progress lines of a phase (the first after as long: short phases print none)
EVERY = 10.0

#: when this process last logged a step's progress line (``time.perf_counter``), see :func:`stepped`
_last_step = [float("-inf")]


def stepped() -> None:
    """Note that a step's progress line was just logged (a training iteration's)."""
    import time

    _last_step[0] = time.perf_counter()


def seconds_since_step() -> float:
    """Seconds since :func:`stepped` was last called in this process (infinite before the first step)."""
    import time

    return time.perf_counter() - _last_step[0]


class Steps:
    """``what``'s progress line for ``total`` steps counted one at a time (:meth:`step`), logged through ``log``
    every ``every`` seconds and at the last step (a phase whose steps are not one loop over items: infvoc's online
    steps, which run over passes and minibatches)."""

    def __init__(self, total: int, what: str, log, every: float = EVERY, clock=None):
        import time

        self.total, self.what, self.log, self.every = int(total), what, log, float(every)
        self.clock = clock or time.perf_counter
        self.done = 0
        self.started = self.last = self.clock()

    def step(self, figure: str = "") -> None:
        """One more step done: log the line if ``every`` seconds passed since the last one, or this is the last."""
        self.done += 1
        now = self.clock()
        if now - self.last >= self.every or self.done == self.total:
            self.log.info("%s", line(self.done, self.total, now - self.started, what=self.what, figure=figure))
            self.last = now


def ticking(items, total: int, what: str, log, every: float = EVERY, clock=None):
    """``items`` (``total`` of them) as they are, logging ``what``'s progress line through ``log`` every
    ``every`` seconds while the caller works on them (a phase in this process: prepare's documents, evaluate's
    blocks)."""
    import time

    clock = clock or time.perf_counter
    started = last = clock()
    for done, item in enumerate(items):
        now = clock()
        if now - last >= every and done:
            log.info("%s", line(done, total, now - started, what=what))
            last = now
        yield item
