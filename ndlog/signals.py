"""Signal handling shared by the commands and the runtimes they start.

Role: two context managers. :func:`handling` sets a signal's handler for a block and puts
the previous one back. :func:`held` holds Ctrl-C (SIGINT) and SIGTERM back while code that
must not be cut short runs: starting Ray or a Spark session, which an interrupt in the
middle left with processes running and nobody to stop them, and a process pool's own code,
which an interrupt inside left unable to shut down. The signal is then acted on as soon as
the block ends, as it would have been. Both act in the main thread only, where Python runs
signal handlers; elsewhere they change nothing.

Deliberately not here: what a command does when it is stopped (``psn.cli`` turns SIGTERM
into :class:`psn.cli.Terminated` and prints the exit message), and stopping the processes a
block started (their owners do that when the held signal is raised).
"""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

__all__ = ["handling", "held", "STOPPING"]

#: the signals :func:`held` holds back by default
STOPPING = (signal.SIGINT, signal.SIGTERM)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def handling(sig: int, action: Callable | int) -> Iterator[None]:
    """Handle ``sig`` with ``action`` inside the block, then put the previous handler back.

    Parameters
    ----------
    sig:
        The signal (``signal.SIGTERM``).
    action:
        A handler, ``signal.SIG_DFL`` or ``signal.SIG_IGN``, as :func:`signal.signal`
        takes it.

    Notes
    -----
    Outside the main thread nothing changes. A previous handler not set from Python
    (:func:`signal.getsignal` gives ``None``) cannot be put back and stays ``action``.
    """
    previous = signal.signal(sig, action) if _main_thread() else None
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(sig, previous)


@contextmanager
def held(signals: tuple[int, ...] = STOPPING, note: str | None = None
         ) -> Iterator[list[int]]:
    """Hold ``signals`` back inside the block, then act on the first one that came.

    While the block runs, a signal that comes is only recorded. When the block ends
    (normally or by an exception), every handler is put back as it was before the block,
    including one the block's code replaced (PySpark installs its own Ctrl-C handler when
    its session starts). Then the first signal recorded is acted on as its handler would
    have done: a Python handler is called (Ctrl-C raises KeyboardInterrupt), the default
    action is taken (SIGTERM ends the process). A handler that returns lets the program go
    on; a caller that stopped its work because of the signal raises KeyboardInterrupt
    itself.

    Parameters
    ----------
    signals:
        The signals to hold (default: SIGINT and SIGTERM). One the process ignores stays
        ignored, and one whose handler was not set from Python is not held.
    note:
        Printed on stderr when the first signal comes, to say why the program goes on for
        a while (``"psn: stopping once Ray has started"``).

    Yields
    ------
    list of int
        The signals recorded so far, in order; a block may poll it to stop early.

    Notes
    -----
    Outside the main thread nothing is held, and the list stays empty.
    """
    asked: list[int] = []
    if not _main_thread():
        yield asked
        return

    def record(signum: int, frame) -> None:
        if note and not asked:
            print(note, file=sys.stderr, flush=True)
        asked.append(signum)

    previous = {sig: signal.getsignal(sig) for sig in signals}
    previous = {sig: h for sig, h in previous.items() if h is not None}
    for sig, handler in previous.items():
        if handler != signal.SIG_IGN:
            signal.signal(sig, record)
    try:
        yield asked
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if asked:
            _act(asked[0], previous[asked[0]])


def _act(sig: int, handler) -> None:
    """What ``handler`` would have done on ``sig``."""
    if callable(handler):
        handler(sig, None)
    elif handler == signal.SIG_DFL:
        signal.raise_signal(sig)
