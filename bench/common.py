"""Shared helpers for the benchmarks: machine description, timing, a plain-text table.

Role: every ``bench/*.py`` prints the same kind of table with the machine it ran on, so
figures in notes and docs can cite it. Deliberately not here: assertions (benchmarks report,
they do not fail; tests never time anything).
"""

from __future__ import annotations

import platform
import resource
import time
from contextlib import contextmanager

__all__ = ["machine", "timer", "print_table", "peak_rss_mb", "print_header"]


def machine() -> str:
    """One line: cores, CPU model, memory, Python and the OS (from
    :func:`psn.experiment.runs.machine_info`, which every experiment records)."""
    from psn.experiment.runs import machine_info
    m = machine_info()
    mem = "? GiB" if m["memory_gib"] is None else f"{m['memory_gib']:.0f} GiB"
    return (f"{m['cpus']} cores ({m['cpu'] or platform.machine()}), {mem}, "
            f"Python {m['python']}, {platform.system()} {platform.release()}")


@contextmanager
def timer():
    """``with timer() as t: ...`` then ``t()`` gives the elapsed seconds."""
    start = time.perf_counter()
    end = [None]
    yield lambda: (end[0] or time.perf_counter()) - start
    end[0] = time.perf_counter()


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def print_header(title: str, command: str) -> None:
    print(f"# {title}")
    print(f"# machine: {machine()}")
    print(f"# command: {command}")
    print(f"# date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


def print_table(headers: list[str], rows: list[list], targets: dict | None = None) -> None:
    """Print rows as an aligned text table (numbers right-aligned)."""
    cells = [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(c.rjust(w) if _numeric(c) else c.ljust(w)
                        for c, w in zip(row, widths)))
    for name, text in (targets or {}).items():
        print(f"target {name}: {text}")


def _fmt(c) -> str:
    if isinstance(c, float):
        return f"{c:.3f}" if abs(c) < 1000 else f"{c:,.0f}"
    if isinstance(c, int):
        return f"{c:,}"
    return str(c)


def _numeric(s: str) -> bool:
    return s.replace(",", "").replace(".", "", 1).lstrip("-").isdigit()
