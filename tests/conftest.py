"""Shared pytest fixtures. Each engineer's fixtures are self-contained blocks below."""

from __future__ import annotations

import signal

import pytest


def pytest_configure(config):
    """Run the suite with Python's own Ctrl-C handler, as in a terminal. A suite started in
    the background (``nohup ... &``) inherits SIGINT ignored: Python then keeps it ignored,
    and so would every process it starts, and the tests of Ctrl-C would fail."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# -- Spark: ONE local session for the whole test session ------------------------------------
@pytest.fixture(scope="session")
def spark():
    """The process's local Spark session (local[2], UI off, quiet), started once.

    Tests that use it are marked ``spark``; the session lives until the process exits, so
    the 5-10 s start is paid once however many Spark tests run.
    """
    from psn.batch.session import get_session
    return get_session("local[2]")


# -- Liu et al. 2009, Fig. 5: reachable on four links, then link(c, b) deleted -----------------
@pytest.fixture
def fig5_files(tmp_path):
    """``f.ndl``: the four links of Liu Fig. 5; ``b.ndl``: the burst deleting link(c, b)
    (the CLI tests of the baselines run it)."""
    (tmp_path / "f.ndl").write_text("link(@a, b). link(@b, c). link(@c, a). link(@c, b).\n")
    (tmp_path / "b.ndl").write_text("-link(@c, b).\n")
    return tmp_path
