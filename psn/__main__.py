"""``python -m psn`` runs the command line.

Deliberately not here: options and subcommands (:mod:`psn.cli`).
"""
import sys

from .cli import main

sys.exit(main())
