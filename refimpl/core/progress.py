"""Progress display of the long commands (run, compare, reproduce, report, verify, sweep, bench).

On a terminal: a tqdm bar on stderr with count, rate and (when the total is known) ETA, the latest
message as its postfix. Elsewhere (CI logs, pipes): the plain one-line messages, exactly as they
would print without a bar. With ``quiet``: nothing.
"""
from __future__ import annotations

import sys


def line_due(t, total, last=True):
    """Whether step ``t`` of a ``total``-step run prints a plain progress line (no terminal): step 0,
    every max(1, total // 20)-th step and, with ``last``, step ``total`` itself."""
    return t % max(1, total // 20) == 0 or (last and t == total)


class Progress:
    """``progress(msg, n=None)``: report a message; ``n`` the absolute position (rounds done),
    otherwise one more unit. ``close()`` ends the bar."""

    def __init__(self, total=None, desc="", unit="it", quiet=False, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.quiet = quiet
        self.bar = None
        if quiet:
            return
        isatty = getattr(self.stream, "isatty", None)
        if isatty is not None and isatty():
            try:
                from tqdm import tqdm
            except ImportError:              # plain lines without the optional display
                return
            self.bar = tqdm(total=total, desc=desc, unit=unit, file=self.stream, dynamic_ncols=True, leave=True)

    @property
    def bar_mode(self):
        return self.bar is not None

    def __call__(self, msg="", n=None):
        if self.quiet:
            return
        if self.bar is None:
            if msg:
                print(msg, file=self.stream, flush=True)
            return
        if n is None:
            self.bar.update(1)
            return self._postfix(msg)
        if self.bar.total is not None:
            # positions summed from recorded seconds can pass the (rounded) total by a rounding error
            n = min(n, self.bar.total)
        if n > self.bar.n:
            self.bar.update(n - self.bar.n)
        self._postfix(msg)

    def _postfix(self, msg):
        if msg:
            self.bar.set_postfix_str(str(msg)[:60], refresh=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
