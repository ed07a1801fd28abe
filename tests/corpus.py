"""The golden corpus of tests/programs/: load each case as (program, facts, expected).

Role: one loader shared by every test that runs the corpus on some evaluator, engine,
transport or annotation scheme. Deliberately not here: running anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import ndlog
import psn
from ndlog.output import read_facts_file, relations_to_json

__all__ = ["CORPUS", "Case", "cases", "load_case", "from_json", "case_ids"]

CORPUS = Path(__file__).with_name("programs")


@dataclass
class Case:
    name: str
    path: Path
    program: "ndlog.ast.Program"
    facts: dict[str, list[tuple]]
    expected: dict[str, set[tuple]]


def _thaw(value):
    if isinstance(value, list):
        return tuple(_thaw(v) for v in value)
    if value == "infinity":
        return float("inf")
    return value


def from_json(data: dict[str, list]) -> dict[str, set[tuple]]:
    return {name: {_thaw(row) for row in rows} for name, rows in data.items()}


def load_case(path: Path) -> Case:
    program = psn.load(path / "program.ndl")
    facts: dict[str, list[tuple]] = {}
    for f in sorted(path.glob("facts*.ndl")):
        for pred, rows in read_facts_file(f).items():
            facts.setdefault(pred, []).extend(rows)
    exp_file = path / "expected.json"
    expected = from_json(json.loads(exp_file.read_text())) if exp_file.exists() else {}
    return Case(path.name, path, program, facts, expected)


def case_dirs() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if (p / "program.ndl").exists())


def cases() -> list[Case]:
    return [load_case(p) for p in case_dirs()]


def case_ids() -> list[str]:
    return [p.name for p in case_dirs()]


def write_expected(case: Case, relations: dict[str, set[tuple]]) -> None:
    """Write expected.json (used once per new case, then reviewed by hand)."""
    (case.path / "expected.json").write_text(
        json.dumps(relations_to_json(relations), indent=1, sort_keys=True) + "\n")
