"""The benchmarks: one module per question, each run as ``python -m bench.<name>`` and
printing a table with the machine it ran on (docs/performance.md lists which answers what;
the current tables are in bench/RESULTS.md).

Deliberately not here: assertions (a benchmark reports; tests never time anything) and
library code (the modules import the project, nothing imports them but their own
``__main__`` runs and :mod:`bench.common`'s users).
"""

__all__: list[str] = []
