"""A long job's progress on the terminal: a line every so often (step, loss, tokens/s, ETA), not every step.

A job run with `--log` sends its output to its log (tqdm's bar included); `cli` hands this module the stream that
still reaches the terminal (Snakemake's, or the runner's), so that a job of many minutes shows it is moving.
Training reads it as one of its probes (called after every step, it adds no row): train.py, whose bytes are in
every run's id, stays as it is, and so do the run ids and the arithmetic.
"""
from __future__ import annotations

import time
from typing import Callable, TextIO

EVERY = 20.0  # seconds between two lines of one job: readable with two jobs at once, often enough to see it move
TERMINAL: list[TextIO] = []  # the stream to the terminal, where the job's own output goes to its log


def to_terminal(stream: TextIO | None) -> None:
    TERMINAL[:] = [stream] if stream else []


class Progress:
    """Prints `name`'s progress to the terminal stream at most once every `every` seconds (and at the last step,
    where it printed before); nothing where there is no terminal stream apart from the log."""

    def __init__(self, name: str, total: int, tokens_per_step: int, *, every: float = EVERY,
                 clock: Callable[[], float] = time.monotonic, stream: TextIO | None = None):
        self.name, self.total, self.tokens_per_step, self.every, self.clock = name, total, tokens_per_step, every, clock
        self.stream = stream or (TERMINAL[0] if TERMINAL else None)
        self.first_step, self.started, self.last, self.printed = None, None, None, 0

    def __call__(self, step: int, model, loss: float) -> None:
        """As a training probe: after each step (and at step 0, before the first); never a row of its own."""
        now = self.clock()
        if self.first_step is None:  # the first call: step 0, or the first step after a resume
            self.first_step, self.started, self.last = step, now, now
        elif self.stream is not None and (now - self.last >= self.every or step == self.total and self.printed):
            self.say(step, loss, now)
        return None

    def say(self, step: int, loss: float, now: float) -> None:
        elapsed, done = now - self.started, step - self.first_step
        rate = done / elapsed if elapsed > 0 and done > 0 else None
        tokens = f"{rate * self.tokens_per_step:,.0f} tokens/s" if rate else "tokens/s not yet known"
        eta = f"ETA {clock_words((self.total - step) / rate)}" if rate else "ETA not yet known"
        print(f"  {self.name}: step {step}/{self.total}, loss {loss:.3f}, {tokens}, {eta}", file=self.stream,
              flush=True)
        self.last, self.printed = now, self.printed + 1


def clock_words(seconds: float) -> str:
    """'0 s', '45 s', '3 min 20 s', '1 h 05 min'."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    return f"{s // 60} min {s % 60:02d} s" if s < 3600 else f"{s // 3600} h {s % 3600 // 60:02d} min"
