"""The kinds and ranges of the generators' options, checked in one place.

Role: :func:`check_options` is what :func:`topologies.make` (and so ``psn run --topology``
and ``psn topology``) runs on every option before a generator sees it, and what the
generators called from Python run first (:func:`checked`): a whole number for
a count (``150.7`` is refused rather than truncated), a finite number for a size or a
probability (``nan`` and ``inf`` are refused rather than making an empty or endless graph),
a recognised spelling for a yes/no option. The generators keep the checks that depend on
the generator (a ring needs 3 nodes, a line 1).

Deliberately not here: building anything, and option names (:func:`topologies.options_of`).
"""

from __future__ import annotations

import functools
import inspect
import math
import os

from ndlog.errors import InputError
from ndlog.text import format_bytes

__all__ = ["OPTION_KINDS", "BOOLEAN_WORDS", "check_options", "check_option", "checked",
           "machine_memory"]

#: ``option -> (kind, lowest, highest)``; the kind is ``int``, ``float``, ``bool`` or
#: ``str``, and ``None`` is no bound. Options not listed (``params``, ``latencies``) are
#: values no command line gives, passed on as they are.
OPTION_KINDS = {
    "n": (int, 1, None), "nodes": (int, 1, None), "sensors": (int, 1, None),
    "rows": (int, 1, None), "cols": (int, 1, None),
    "seeds": (int, 0, None), "m": (int, 0, None), "sink": (int, 0, None),
    "size": (float, 0, None), "radius": (float, 0, None),
    "latency": (float, 0, None), "p": (float, 0, 1),
    "quirks": (bool, None, None), "connected": (bool, None, None),
    "placement": (str, None, None), "spec": (str, None, None),
    "seed": (int, None, None), "count": (int, 1, None),
}

#: the spellings a yes/no option takes (any case)
BOOLEAN_WORDS = {"true": True, "yes": True, "on": True, "1": True,
                 "false": False, "no": False, "off": False, "0": False}

#: options whose lowest value is excluded (a size or radius of 0 makes no area)
_ABOVE = frozenset({"size", "radius"})


def check_options(name: str, options: dict) -> dict:
    """``options`` of the topology ``name``, each checked by :func:`check_option`.

    Returns
    -------
    dict
        The options with whole floats made ``int`` (``nodes=1e3`` is 1000) and yes/no
        words made ``bool``.

    Raises
    ------
    InputError
        For the first option of the wrong kind or out of range, naming it and its value.
    """
    return {key: check_option(name, key, value) for key, value in options.items()}


def check_option(name: str, key: str, value):
    """``value`` of option ``key`` of the topology ``name``, checked and normalized (see
    :func:`check_options`); a ``None`` value (the generator's default) passes."""
    if key not in OPTION_KINDS or value is None:
        return value
    kind, low, high = OPTION_KINDS[key]
    what = f"topology {name}: option {key}"
    shown = _shown(value)
    if kind is bool:
        word = str(value).strip().lower() if isinstance(value, (str, int)) else None
        if isinstance(value, bool):
            return value
        if word in BOOLEAN_WORDS:
            return BOOLEAN_WORDS[word]
        raise InputError(f"{what} is yes or no, not {shown}",
                         hint=f"give {key}=true or {key}=false")
    if kind is str:
        if not isinstance(value, str):
            raise InputError(f"{what} is a word, not {shown}")
        return value
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or isinstance(value, float) and not math.isfinite(value):
        noun = "a finite whole number" if kind is int else "a finite number"
        raise InputError(f"{what} must be {noun}, not {shown}",
                         hint=f"give {noun}, e.g. {key}={_example(key)}")
    if kind is int:
        if isinstance(value, float):
            if not value.is_integer():
                raise InputError(f"{what} must be a whole number, not {shown}",
                                 hint=f"give a whole number, e.g. {key}={round(value)}")
            value = int(value)
    if low is not None and (value <= low if key in _ABOVE else value < low):
        bound = f"> {low:g}" if key in _ABOVE else f">= {low:g}"
        raise InputError(f"{what} must be {bound}, not {shown}")
    if high is not None and value > high:
        raise InputError(f"{what} must be at most {high:g}, not {shown}")
    return value


def checked(name: str):
    """Decorator: the generator's arguments pass :func:`check_options` (as the topology
    ``name``) before it runs, so that a call from Python is checked as ``make`` is; an
    unknown option or too many arguments is an InputError naming the generator's; and
    None is refused for a parameter whose default is not None (``seed=None`` would seed
    the generator from the clock) or, for an option of :data:`OPTION_KINDS`, that has no
    default."""
    def wrap(fn):
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            hint = f"the options of {fn.__name__} are {', '.join(signature.parameters)}"
            unknown = [key for key in kwargs if key not in signature.parameters]
            if unknown:
                raise InputError(f"topology {name!r} has no option {unknown[0]!r}", hint=hint)
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as exc:      # too many arguments, or one given twice
                raise InputError(f"topology {name!r}: {fn.__name__}() {exc}",
                                 hint=hint) from None
            for key, value in bound.arguments.items():
                default = signature.parameters[key].default
                if value is None and default is inspect.Parameter.empty and \
                        key in OPTION_KINDS:      # the generator names other values
                    raise InputError(f"topology {name}: option {key} is None; it has no "
                                     f"default", hint=f"give {key}={_example(key)}, say")
                if value is None and default not in (None, inspect.Parameter.empty):
                    shown = f" ({default!r})" if len(repr(default)) <= 24 else ""
                    why = (", which seeds the generator: a graph made without a seed could "
                           "not be made again" if key == "seed" else "")
                    raise InputError(f"topology {name}: option {key} is None; leave it out "
                                     f"for its default{shown}{why}")
            bound.arguments.update(check_options(name, dict(bound.arguments)))
            _check_machine_size(name, bound.arguments)
            return fn(*bound.args, **bound.kwargs)
        return call
    return wrap


def _example(key: str) -> str:
    return {"p": "0.2", "size": "100", "radius": "20", "latency": "1", "nodes": "300",
            "sensors": "100", "seeds": "5", "m": "40", "n": "10", "seed": "1"}.get(key, "4")


def _shown(value) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text)} characters)"


def machine_memory() -> int | None:
    """This machine's physical memory in bytes (None where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _check_machine_size(name: str, arguments) -> None:
    """Refuse to build a graph that would not fit in this machine's memory by its
    estimate (:func:`topologies.check_size`): ``topologies.ring(10**12)`` from Python would
    otherwise build until the memory runs out. The command line checks against its lower
    ``--max-memory`` first."""
    limit = machine_memory()
    if limit:
        from . import check_size      # the package imports this module first
        options = {k: v for k, v in arguments.items() if k not in ("name", "limit", "hint")}
        check_size(name, limit, hint=f"make it smaller: this machine has "
                   f"{format_bytes(limit)} of memory", **options)
