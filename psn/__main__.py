"""``python -m psn`` runs the command line.

Deliberately not here: options and subcommands (:mod:`psn.cli`).
"""
from .cli import entry

entry()
