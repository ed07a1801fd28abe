"""Signal handling shared by the commands and the runtimes they start.

Role: two context managers. :func:`handling` sets a signal's handler for a block and puts
the previous one back. :func:`held` holds Ctrl-C (SIGINT) and SIGTERM back while code that
must not be cut short runs: starting Ray or a Spark session, which an interrupt in the
middle left with processes running and nobody to stop them; a process pool's own code,
which an interrupt inside left unable to shut down; and CUDD's constructor, which an
exception inside leaves half-made, its destructor printing an error. The signal is then
acted on as soon as the block ends, as it would have been. Both act in the main thread
only, where Python runs signal handlers; elsewhere they change nothing.

Deliberately not here: what a command does when it is stopped (``psn.cli`` turns SIGTERM
into :class:`psn.cli.Terminated` and prints the exit message), and stopping the processes a
block started (their owners do that when the held signal is raised).
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

__all__ = ["handling", "held", "in_main_thread", "STOPPING"]

#: the signals :func:`held` holds back by default
STOPPING = (signal.SIGINT, signal.SIGTERM)


def in_main_thread() -> bool:
    """True in the main thread, the only one where Python runs signal handlers."""
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
    if not in_main_thread():
        yield
        return
    previous = signal.getsignal(sig)
    try:
        signal.signal(sig, action)
        yield
    finally:
        if previous is not None:
            _restore({sig: previous})


@contextmanager
def held(signals: tuple[int, ...] = STOPPING, note: str | None = None,
         again_now: bool = False) -> Iterator[list[int]]:
    """Hold ``signals`` back inside the block, then act on the first one that came.

    While the block runs, a signal that comes is only recorded. When the block ends
    (normally or by an exception), every handler is put back as it was before the block,
    including one the block's code replaced (PySpark installs its own Ctrl-C handler when
    its session starts). Then the first signal recorded is acted on as its handler would
    have done: a Python handler is called (Ctrl-C raises KeyboardInterrupt), the default
    action is taken (SIGTERM ends the process). An exception the handler raises replaces
    the block's own, which it keeps as its ``__context__``. A handler that returns lets
    the program go on; a caller that stopped its work because of the signal raises
    KeyboardInterrupt itself.

    Parameters
    ----------
    signals:
        The signals to hold (default: SIGINT and SIGTERM). One the process ignores stays
        ignored, and one whose handler was not set from Python is not held.
    note:
        Written on stderr when the first signal comes, to say why the program goes on for
        a while (``"psn: stopping once Ray has started"``).
    again_now:
        Act on a second signal at once, inside the block: a way out when the block hangs
        (a start-up that waits on a network peer), at the price of what holding avoids.

    Yields
    ------
    list of int
        The signals recorded so far, in order; a block may poll it to stop early.

    Notes
    -----
    Outside the main thread nothing is held, and the list stays empty. Handlers are
    swapped so that a signal arriving in the middle of the swap (its handler raising
    between two of them) still leaves every one put back.
    """
    asked: list[int] = []
    if not in_main_thread():
        yield asked
        return
    previous = {sig: signal.getsignal(sig) for sig in signals}
    previous = {sig: h for sig, h in previous.items() if h is not None}
    acted: list[int] = []

    def record(signum: int, frame) -> None:
        asked.append(signum)
        if len(asked) == 1 and note:
            os.write(2, (note + "\n").encode())   # not print: a handler may interrupt one
        elif len(asked) > 1 and again_now and not acted:
            acted.append(signum)
            _act(signum, previous[signum])

    try:
        for sig, handler in previous.items():
            if handler != signal.SIG_IGN:
                signal.signal(sig, record)
        yield asked
    finally:
        _restore(previous)
        if asked and not acted:
            _act(asked[0], previous[asked[0]])


def _restore(handlers: dict) -> None:
    """Install ``handlers`` (signal -> handler), every one of them even when a signal
    handler raises in between (one just put back, acting on a signal that came meanwhile;
    at most one per signal is pending); then the first such exception is raised."""
    raised = None
    for sig, handler in handlers.items():
        for _ in range(len(handlers) + 1):
            try:
                signal.signal(sig, handler)
                break
            except BaseException as exc:    # a handler's exception: finish the swap first
                raised = raised or exc
    if raised is not None:
        raise raised


def _act(sig: int, handler) -> None:
    """What ``handler`` would have done on ``sig``."""
    if callable(handler):
        handler(sig, None)
    elif handler == signal.SIG_DFL:
        signal.raise_signal(sig)
