"""Output files written whole or not at all.

Role: every file PSN writes for a user (metrics, counterexamples, reports, relations,
localized programs, topologies, the experiment cache) is written to a temporary file beside
it and renamed into place, so that an interrupted run (Ctrl-C, SIGTERM, a full disk) leaves
either the previous file or none, never a truncated one that still parses (a CSV cut after
a complete row looks whole). A failure is an :class:`~ndlog.errors.InputError` naming the
file.

Deliberately not here: what is written (formats belong to their modules), locking between
concurrent writers (the last rename wins, and each file is whole).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

from .errors import InputError

__all__ = ["atomic_open", "write_atomic"]


@contextmanager
def atomic_open(path: str | Path, what: str = "", newline: str | None = None
                ) -> Iterator[IO[str]]:
    """A text file to write ``path`` through: it replaces ``path`` when the block ends
    normally, and is removed when the block raises (``path`` is then untouched).

    Parameters
    ----------
    path:
        The file to write.
    what:
        What it is, for the error message (``"metrics file"``).
    newline:
        As :func:`open` takes it (``""`` for the csv module).

    Raises
    ------
    ndlog.errors.InputError
        If the file cannot be created, written or renamed, naming it.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fh = open(tmp, "w", newline=newline, encoding="utf-8")
    except OSError as exc:
        raise _error(path, what, exc) from None
    try:
        with fh:
            yield fh
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _error(path, what, exc) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: str | Path, text: str, what: str = "") -> None:
    """Write ``text`` to ``path`` whole or not at all (:func:`atomic_open`).

    Parameters
    ----------
    path, what:
        As :func:`atomic_open` takes them.
    text:
        The file's content.

    Raises
    ------
    ndlog.errors.InputError
        If the file cannot be written, naming it.
    """
    with atomic_open(path, what) as fh:
        fh.write(text)


def _error(path: Path, what: str, exc: OSError) -> InputError:
    return InputError(f"cannot write {what + ' ' if what else ''}'{path}': "
                      f"{exc.strerror or exc}")
