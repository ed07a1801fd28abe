"""Output files written whole or not at all.

Role: every file PSN writes for a user (metrics, counterexamples, reports, relations,
localized programs, topologies, the experiment cache) is written to a temporary file beside
it and renamed into place, so that an interrupted run (Ctrl-C, SIGTERM, a full disk) leaves
either the previous file or none, never a truncated one that still parses (a CSV cut after
a complete row looks whole). A device or a named pipe (``/dev/null``, ``/dev/stdout``) is
written in place, and a symbolic link's target is replaced, not the link. A failure is an
:class:`~ndlog.errors.InputError` naming the file.

A directory that one process at a time writes a set of files into (an experiment's
output) is claimed with :func:`claimed_dir`: a second process is refused at once, naming the
directory, instead of running the same work and interleaving its files with the first's.

Deliberately not here: what is written (formats belong to their modules), locking of single
files (the last rename wins, and each file is whole).
"""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

from .errors import InputError

try:
    import fcntl
except ImportError:             # not POSIX: directories are not claimed
    fcntl = None

__all__ = ["atomic_open", "write_atomic", "claimed_dir", "require_parent", "require_writable",
           "file_path", "CLAIM_FILE"]

#: the file in a claimed directory whose lock marks the claim (it holds the claimant's pid)
CLAIM_FILE = ".psn-lock"


def file_path(path, what: str = "file") -> Path:
    """``path`` as a :class:`~pathlib.Path`.

    Raises
    ------
    ndlog.errors.InputError
        If ``path`` is not a path (a string or an ``os.PathLike``), naming what it got, or
        is empty (``Path("")`` is the current directory) or holds a NUL byte (which no
        file name can: the system calls raised ValueError).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"the {what} must be a path (a str or a pathlib.Path), got "
                         f"{type(path).__name__} {path!r:.80}")
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text:
        raise InputError(f"the {what} must be a path, got an empty one")
    if "\0" in text:
        raise InputError(f"the {what} {text!r:.80} holds a NUL byte, which no file name can")
    return Path(path)


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
    path = file_path(path, what or "file")
    in_place = _is_stream(path)
    try:
        if not in_place and path.is_symlink():
            path = Path(os.path.realpath(path))
    except OSError as exc:      # a name too long for the file system
        raise _error(path, what, exc) from None
    target = path if in_place else path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fh = open(target, "w", newline=newline, encoding="utf-8")
    except OSError as exc:
        raise _error(path, what, exc) from None
    try:
        with fh:
            yield fh
        if not in_place:
            os.replace(target, path)
    except OSError as exc:
        if not in_place:
            target.unlink(missing_ok=True)
        raise _error(path, what, exc) from None
    except BaseException:
        if not in_place:
            target.unlink(missing_ok=True)
        raise


def _is_stream(path: Path) -> bool:
    """True if ``path`` (or what its symbolic link points at) exists and is no regular file
    or directory: a device (``/dev/null``, ``/dev/stdout``'s terminal) or a named pipe.
    Such a file is written in place: renaming a file over it would replace the device by
    a regular file (``/dev/null`` itself, for a user allowed to write ``/dev``)."""
    try:
        mode = path.stat().st_mode
    except OSError:                 # missing (or a dangling link): a new regular file
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


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


@contextmanager
def claimed_dir(path: str | Path, what: str = "directory", hint: str = "") -> Iterator[Path]:
    """Claim the directory ``path`` (created if missing, in a parent directory that must
    exist, as every output file's must) for this process during the block.

    The claim is an exclusive lock on ``path/.psn-lock``, which the system drops when the
    process ends however it ends, so a stopped or killed run never leaves a stale claim.
    The file itself stays (removing it would let a third process lock a new file while a
    second still waits on the old one). On a file system without locks, and on a system
    without ``fcntl``, the directory is used unclaimed.

    Parameters
    ----------
    path:
        The directory.
    what:
        What it is, for the error message (``"experiment output"``).
    hint:
        How to get past a claim by another process, for the error message.

    Yields
    ------
    pathlib.Path
        ``path``.

    Raises
    ------
    ndlog.errors.InputError
        If another process holds the claim (naming it by pid), or the directory cannot be
        created (its parent directory does not exist, say).
    """
    path = Path(path)
    require_parent(path, what)
    try:
        path.mkdir(exist_ok=True)
        fd = os.open(path / CLAIM_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise _error(path, what, exc) from None
    try:
        if fcntl is not None:
            _claim(fd, path, what, hint)
        yield path
    finally:
        os.close(fd)


def require_parent(path: str | Path, what: str = "") -> None:
    """Refuse an output path whose parent directory does not exist.

    Parameters
    ----------
    path:
        A file or directory to be written.
    what:
        What it is, for the error message (``"the run cache"``).

    Raises
    ------
    ndlog.errors.InputError
        If the parent directory of ``path`` is missing (or is not a directory), naming it,
        or ``path`` is not a path (:func:`file_path`).
    """
    path = file_path(path, "output path")
    parent = path.parent
    try:
        missing = not parent.is_dir()
        why = "is not a directory" if missing and parent.exists() else "does not exist"
    except OSError as exc:      # a name too long for the file system
        raise _error(path, what, exc) from None
    if missing:
        raise InputError(f"cannot write {what + ' ' if what else ''}'{path}': the "
                         f"directory '{parent}' {why}",
                         hint="create it first, or give a path in an existing directory")


def require_writable(path: str | Path | None, what: str = "") -> None:
    """Refuse, before any work, an output file that could not be written at the end: its
    parent directory is missing or not a directory, or the path is a directory. A command
    checks its output paths with this up front, so that a long run (a verification, a Spark
    job) is not done only to fail at the last step. ``None`` (no output file) passes.

    Parameters
    ----------
    path:
        The file to be written, or None.
    what:
        What it is, for the error message (``"metrics file"``).

    Raises
    ------
    ndlog.errors.InputError
        Naming the file and what is wrong with it.
    """
    if path is None:
        return
    if isinstance(path, str) and not path.strip():
        raise InputError(f"the name of the {what or 'output file'} is empty (an unset shell "
                         f"variable?)", hint="give a file name, or leave the option out")
    path = file_path(path, what or "file")
    require_parent(path, what)
    if path.is_dir():
        raise InputError(f"cannot write {what + ' ' if what else ''}'{path}': it is a "
                         f"directory", hint="give a file name, e.g. a file in that directory")


def _claim(fd: int, path: Path, what: str, hint: str) -> None:
    """Lock the open claim file ``fd`` and write this process's id into it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
        by = f"process {holder}" if holder.isdigit() else "another process"
        raise InputError(f"{what} {path} is in use by {by}", hint=hint) from None
    except OSError:             # no locks on this file system (ENOLCK, EOPNOTSUPP)
        return
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
