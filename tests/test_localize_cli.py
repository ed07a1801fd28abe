"""``psn localize PROGRAM [--explain] [-o FILE]``: output parses again; errors exit 2."""

from __future__ import annotations

import subprocess
import sys

import psn
from psn.cli import main

import localize

from corpus import CORPUS

LOCALIZE = CORPUS / "localize"
ROOT = CORPUS.parent.parent


def test_prints_the_localized_program(capsys):
    path = LOCALIZE / "nigam_r2" / "program.ndl"
    assert main(["localize", str(path)]) == 0
    out = capsys.readouterr().out
    assert out == (LOCALIZE / "nigam_r2" / "expected.ndl").read_text()
    assert psn.parse(out) == localize.localize(psn.load(path))


def test_explain_is_commented_and_the_output_still_parses(capsys):
    path = CORPUS / "shortest_path" / "program.ndl"
    assert main(["localize", str(path), "--explain"]) == 0
    out = capsys.readouterr().out
    comments = [line for line in out.splitlines() if line.startswith("//")]
    assert any("sp2 (line 3): its body spans @S and @Z" in c for c in comments)
    assert any("It became sp2b, sp2c (and the mirror sp2a)" in c for c in comments)
    assert any(c.startswith("//       mirror: ") for c in comments)
    assert psn.parse(out) == localize.localize(psn.load(path))


def test_output_file(tmp_path, capsys):
    target = tmp_path / "out.ndl"
    path = CORPUS / "nigam_fig1" / "program.ndl"
    assert main(["localize", str(path), "-o", str(target)]) == 0
    assert capsys.readouterr().out == ""
    assert psn.load(target) == localize.localize(psn.load(path))


def test_unlocalizable_rule_exits_2_with_the_rendered_error(capsys):
    path = LOCALIZE / "rejected" / "unlinked_two.ndl"
    rel = path.relative_to(ROOT).as_posix()
    proc = subprocess.run([sys.executable, "-m", "psn", "localize", rel], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == path.with_suffix(".expected").read_text()
    assert "Traceback" not in proc.stderr
