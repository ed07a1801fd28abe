"""The Python examples of the README and of docs/ run as printed, and say what is true.

Each fenced ``python`` block runs in a fresh interpreter in a scratch directory that holds
the project's ``examples/``. A block that uses names it does not define (a topology file,
a program) gets them from a short prelude; an epilogue then checks what the block's
comments claim. Real Ray, real CUDD: nothing is replaced.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: ``document -> (prelude, epilogue)`` around each of its Python blocks
CASES = {
    "README.md": ("", """
assert psn.evaluate(program, {"link": [(1, 2), (2, 3)]})["reachable"] == {
    (1, 2), (2, 3), (1, 3)}
assert net.relations()["reachable"] == {(1, 2)} and net.metrics["bytes_sent"] > 0
"""),
    "docs/simulator.md": ("", """
assert [s.label for s in steps][:5] == ["insert 0.25", "insert 0.5", "insert 0.75",
                                        "insert 1", "delete 60-61"]
assert len(steps) == 24 and all(s.check for s in steps)
assert Path("run.json").stat().st_size > 0
"""),
    "docs/distributed.md": ("", """
assert reach == psn.evaluate(program, {"link": facts["link"][1:]})["reachable"]
assert m["bytes_sent"] > 0
"""),
    "docs/topologies.md": ("""
import topologies
topologies.save(topologies.generate(), "ts100-0.alt")
u, v = topologies.generate().links[0].key
""", """
assert topo.n == 100 and big.n == 1000 and mine == topologies.generate()
assert grid.facts()["seed"] and topo.latency(u, v) > 0
assert len(topo.link_facts(2)) == 2 * topo.num_links
"""),
    "docs/verify.md": ("""
import psn
program = psn.load("examples/reachable.ndl")
links = [(1, 2), (2, 3), (3, 1)]
""", """
assert result.ok and result.complete and result.counterexample is None
"""),
}


def python_blocks(text: str) -> list[str]:
    """The bodies of the fenced ``python`` blocks of a Markdown text."""
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_every_document_with_python_examples_is_listed():
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    with_blocks = {str(p.relative_to(ROOT)) for p in documents
                   if python_blocks(p.read_text(encoding="utf-8"))}
    assert with_blocks == set(CASES)


@pytest.mark.parametrize("document", sorted(CASES))
def test_a_documented_python_example_runs_and_says_what_is_true(document, tmp_path):
    blocks = python_blocks((ROOT / document).read_text(encoding="utf-8"))
    assert blocks, f"{document} has no python block"
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    prelude, epilogue = CASES[document]
    script = "from pathlib import Path\n" + prelude + "\n".join(blocks) + epilogue
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, text=True,
                          capture_output=True, timeout=600,
                          env=_env_with_project_on_path())
    assert done.returncode == 0, f"{document}:\n{done.stderr[-3000:]}"


def _env_with_project_on_path() -> dict:
    """This environment, with the project first on ``PYTHONPATH``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def shell_commands(text: str) -> list[list[str]]:
    """The ``psn`` command lines of a Markdown text's fenced blocks (not Python or JSON),
    as argument lists after ``psn``; a synopsis (``[--seed N]``, ``ring|line``,
    ``(A | B)``) is not a command and is left out."""
    commands = []
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M):
        if lang in ("python", "json"):
            continue
        for line in body.replace("\\\n", " ").splitlines():
            for part in re.split(r"&&|\s\|\s", line.split(" # ")[0]):
                found = re.match(r"\s*(?:\$ )?(?:python3? -m )?psn (.*)", part)
                if not found:
                    continue
                argv = shlex.split(found.group(1))
                if argv and argv[0] in SUBCOMMANDS and not any(
                        a.startswith(("[", "(")) or "|" in a for a in argv):
                    commands.append(argv)
    return commands


SUBCOMMANDS = ("eval", "localize", "run", "verify", "reference", "topology", "demo",
               "experiment")


def test_every_documented_command_line_is_one_psn_takes():
    """A renamed option or a moved example file breaks the documentation silently."""
    from psn.cli import build_parser

    seen = 0
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for argv in shell_commands(path.read_text(encoding="utf-8")):
            seen += 1
            try:
                build_parser().parse_args(argv)
            except SystemExit:
                pytest.fail(f"{path.relative_to(ROOT)}: psn {shlex.join(argv)}")
            for arg in argv:
                if arg.startswith(("examples/", "tests/")):
                    assert (ROOT / arg).exists(), f"{path.relative_to(ROOT)}: {arg}"
    assert seen >= 25
