"""The ``psn`` command line.

Role: parse arguments, dispatch to one subcommand module, and turn every
:class:`~ndlog.errors.PSNError` into a clear message on stderr with exit status 2 (never a
traceback for a user's mistake). Each subcommand lives in its own module with a
``register(subparsers)`` function that adds its parser and sets ``func(args) -> int``.

Deliberately not here: any evaluation logic; subcommand modules import heavy dependencies
(Ray, Spark) inside their ``func`` only, so that ``psn --help`` stays fast.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import signal
import sys
import threading
from contextlib import contextmanager

from ndlog.errors import PSNError
from ndlog.signals import handling

__all__ = ["main", "entry", "build_parser", "Terminated"]


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is, so that it stops as after Ctrl-C: worker
    processes stopped, files whole (by default the process died at once, and its workers
    ran on without it)."""


class _OnSigterm:
    """The command's SIGTERM handler: raises :class:`Terminated`, and remembers that it
    did, since code that waits in a runtime's native call (Ray's ``ray.get``) turns any
    exception a handler raised into a plain KeyboardInterrupt.

    A signal that lands where Python cannot raise (a finalizer such as a ``__del__``
    method or a :func:`weakref.finalize` callback, a C extension's constructor) would be
    printed as an ignored exception, and the command would go on: while
    :meth:`installed`, it is sent again a moment later instead, where it stops the
    command (as :func:`psn.experiment.runs.alarm` does with its alarm)."""

    #: seconds before a signal that could not be raised is sent again
    RETRY = 0.05

    def __init__(self) -> None:
        self.fired = False

    def __call__(self, signum, frame):
        self.fired = True
        raise Terminated()

    @contextmanager
    def installed(self):
        """This handler for SIGTERM, and an unraisable hook that sends again a
        :class:`Terminated` Python could not raise (other unraisable exceptions go to the
        hook before)."""
        previous = sys.unraisablehook

        def unraisable(report):
            if isinstance(report.exc_value, Terminated):
                threading.Timer(self.RETRY, os.kill, (os.getpid(), signal.SIGTERM)).start()
                return
            previous(report)
        sys.unraisablehook = unraisable
        try:
            with handling(signal.SIGTERM, self):
                yield self
        finally:
            sys.unraisablehook = previous


#: subcommand modules, in the order ``psn --help`` lists them
COMMANDS = ("eval_cmd", "localize_cmd", "run_cmd", "verify_cmd", "reference_cmd",
            "topology_cmd", "demo_cmd", "experiment_cmd")


def build_parser() -> argparse.ArgumentParser:
    """The ``psn`` argument parser with every subcommand of :data:`COMMANDS` registered.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog="psn",
        description="PSN: pipelined semi-naive evaluation of network Datalog (NDlog).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The ``psn`` command: parse ``argv`` and run the subcommand.

    A user's mistake (any :class:`~ndlog.errors.PSNError`) is printed as its rendered
    message, without a traceback.

    Parameters
    ----------
    argv:
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: the subcommand's; 2 for a user's mistake or no subcommand
        (argparse exits with 2 on a bad option); 130 when interrupted (Ctrl-C), 143 when
        terminated (SIGTERM); 141 when the output pipe closed early (as for a program
        that SIGPIPE ended: the command's own status, e.g. a failed check's 1, was never
        reached, and 0 let that pass in a pipeline).
    """
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:                   # the subcommand's usage, not psn's, goes with the error
        _subparser(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    sigterm = _OnSigterm()
    with sigterm.installed():
        try:
            return int(args.func(args) or 0)
        except PSNError as exc:
            print(exc.render(), file=sys.stderr)
            return 2
        except KeyboardInterrupt as exc:
            if sigterm.fired or isinstance(exc, Terminated):
                print("psn: terminated", file=sys.stderr)
                return 143
            print("psn: interrupted", file=sys.stderr)
            return 130
        except BrokenPipeError:
            _discard_stdout()
            return 141


def entry() -> None:
    """The ``psn`` executable and ``python -m psn``: :func:`main` on ``sys.argv``, then exit
    with its status, without the interpreter's last garbage collection.

    That collection traverses every object still alive, and a large run leaves millions:
    ``psn run`` of reachable on the dense 300-node topology with absorption took 1.55 s to
    exit after its last output, 0.03 s once they are frozen (``gc.freeze``, the same
    machine and command). Every file a command writes is closed when the command returns;
    the standard streams are flushed and exit handlers (Ray's and Spark's shutdown) run as
    before. Only the executable does this: :func:`main` called in a process that goes on
    (a test, a notebook) leaves the collector alone.
    """
    status = main()
    gc.freeze()
    sys.exit(status)


def _subparser(parser: argparse.ArgumentParser, args) -> argparse.ArgumentParser:
    """The parser of the subcommand ``args`` chose (``parser`` itself without one)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and args.command:
            return action.choices.get(args.command, parser)
    return parser


def _discard_stdout() -> None:
    """Point standard output at the null device: what is still buffered for the closed
    pipe is dropped instead of failing again at exit ('Exception ignored')."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):   # no file descriptor behind stdout: nothing to flush
        pass


if __name__ == "__main__":  # pragma: no cover
    entry()
