"""Wording of the messages and reports PSN prints: counts with their nouns, sizes in bytes,
a long step's progress.

Role: small helpers that make printed text read naturally (``1 tuple``, ``2 tuples``,
``1,000 steps``, ``3.21 GiB``), and the heartbeat that shows a long step on a progress bar,
shared by every package that prints (it sits in the language core, which every other
package may import).

Deliberately not here: rendering of relations or values (:mod:`ndlog.output`,
:func:`ndlog.builtins.format_value`).
"""

from __future__ import annotations

__all__ = ["count_noun", "format_bytes", "shows_progress", "step_heartbeat", "json_kind"]


def shows_progress(progress: bool | None) -> bool:
    """Whether to show a progress bar: as asked, or by default (``None``) when standard
    error is a terminal (so that logs and pipes get none)."""
    import sys
    return sys.stderr.isatty() if progress is None else bool(progress)


def count_noun(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and the noun that agrees with it, the count with thousands separators.

    Parameters
    ----------
    n:
        The count.
    singular:
        The noun for exactly one (``"tuple"``).
    plural:
        The noun for any other count; default ``singular + "s"`` (give it for irregular
        nouns: ``count_noun(n, "entry", "entries")``).

    Returns
    -------
    str
        ``"1 tuple"``, ``"0 tuples"``, ``"1,000 steps"``.

    Examples
    --------
    >>> count_noun(1, "tuple"), count_noun(2, "tuple"), count_noun(0, "tuple")
    ('1 tuple', '2 tuples', '0 tuples')
    >>> count_noun(1000, "step")
    '1,000 steps'
    >>> count_noun(3, "entry", "entries"), count_noun(1, "entry", "entries")
    ('3 entries', '1 entry')
    """
    noun = singular if n == 1 else (plural if plural is not None else singular + "s")
    return f"{n:,} {noun}"


def format_bytes(n: int) -> str:
    """``3.21 GiB`` or ``512.0 MiB``; past any float (an estimate from a huge count), its
    order of magnitude, ``10^393 GiB``."""
    if n.bit_length() > 1000:
        return f"10^{len(str(n >> 30)) - 1} GiB"
    if n >= 1 << 30:
        return f"{n / (1 << 30):.2f} GiB"
    return f"{n / (1 << 20):.1f} MiB"


def step_heartbeat(bar, label: str, clock=None, every: float = 0.5,
                   what: tuple = (("delivery", "deliveries"),
                                  ("update in flight", "updates in flight"))):
    """A ``heartbeat(done, in_flight)`` (as :meth:`engine.Network.run` calls it after every
    delivery) that shows a long step's progress on a progress ``bar`` at most every
    ``every`` seconds: the step's ``label``, the two counts, and with a ``clock`` its
    virtual time.

    Parameters
    ----------
    bar:
        A tqdm bar (anything with ``set_postfix_str``); None for no heartbeat.
    label:
        The step's label.
    clock:
        The simulator's clock (``clock.now()`` in virtual seconds), or None.
    every:
        Seconds of wall time between two updates of the bar.
    what:
        What the two counts are, each as ``(singular, plural)`` (Ray counts batches
        between workers).

    Returns
    -------
    callable or None
        None when ``bar`` is None.
    """
    if bar is None:
        return None
    import time
    shown = [time.monotonic()]

    def beat(done: int, in_flight: int) -> None:
        now = time.monotonic()
        if now - shown[0] >= every:
            shown[0] = now
            at = "" if clock is None else f"t={clock.now():.3f}s, "
            bar.set_postfix_str(f"{label}: {at}{count_noun(done, *what[0])}, "
                                f"{count_noun(in_flight, *what[1])}")
    return beat


def json_kind(value) -> str:
    """``object``, ``list``, ``string``, ``number``, ``boolean`` or ``null``: the JSON
    name of a value parsed from JSON, for messages about a file a user wrote or edited
    (Python's names, ``dict`` or ``NoneType``, mean nothing in a JSON file)."""
    names = {dict: "object", list: "list", str: "string", bool: "boolean", int: "number",
             float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
