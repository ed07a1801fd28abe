"""Shared pytest fixtures. Each engineer's fixtures are self-contained blocks below."""

from __future__ import annotations

import pytest


# -- Spark: ONE local session for the whole test session ------------------------------------
@pytest.fixture(scope="session")
def spark():
    """The process's local Spark session (local[2], UI off, quiet), started once.

    Tests that use it are marked ``spark``; the session lives until the process exits, so
    the 5-10 s start is paid once however many Spark tests run.
    """
    from psn.batch.session import get_session
    return get_session("local[2]")
