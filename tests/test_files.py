"""Output files are written whole or not at all (ndlog.files): an interrupted writer
leaves the previous file and no temporary file beside it."""

from __future__ import annotations

import pytest

from ndlog.errors import InputError
from ndlog.files import atomic_open, write_atomic
from sim.metrics import StepResult, write_csv


def _steps(n: int, fail_at: int | None = None):
    for i in range(n):
        if i == fail_at:
            raise KeyboardInterrupt            # what Ctrl-C raises in the middle of a write
        yield StepResult(index=i, label=f"step {i}", inserted=1, deleted=0, start=0.0,
                         sim_time=0.1, wall_time=0.1, events=1, traffic={"bytes_sent": 1},
                         per_node={0: {"bytes_sent": 1}})


def test_an_interrupted_metrics_file_leaves_the_previous_one(tmp_path):
    path = tmp_path / "m.csv"
    write_csv(path, _steps(3))
    whole = path.read_text()
    assert whole.count("\n") == 1 + 3 * 2          # header, then a total and a node row
    with pytest.raises(KeyboardInterrupt):
        write_csv(path, _steps(5, fail_at=2))       # it wrote rows in place before
    assert path.read_text() == whole
    assert [p.name for p in tmp_path.iterdir()] == ["m.csv"]
    with pytest.raises(KeyboardInterrupt):
        write_csv(tmp_path / "new.csv", _steps(5, fail_at=1))
    assert [p.name for p in tmp_path.iterdir()] == ["m.csv"]


def test_a_file_that_cannot_be_written_is_an_input_error_naming_it(tmp_path):
    missing = tmp_path / "no" / "such" / "dir" / "out.json"
    with pytest.raises(InputError, match=r"cannot write metrics file '.*out\.json'"):
        write_atomic(missing, "{}", "metrics file")
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match="cannot write '.*d'"):      # a directory
        with atomic_open(tmp_path / "d") as fh:
            fh.write("x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]
    write_atomic(tmp_path / "ok.txt", "é\n")
    assert (tmp_path / "ok.txt").read_text(encoding="utf-8") == "é\n"
