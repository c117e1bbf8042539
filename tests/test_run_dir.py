"""run_dir: every run-directory name in one module, and the one writer of metrics.json."""

import ast
import json
from pathlib import Path

import pytest

from hatt import run_dir

HATT = Path(__file__).resolve().parents[1] / "hatt"


def test_write_metrics_writes_indented_json_atomically(tmp_path):
    run_dir.write_metrics(tmp_path, {"accuracy": 0.5, "class_names": ["a", "b"]})
    path = tmp_path / run_dir.METRICS
    assert json.loads(path.read_text()) == {"accuracy": 0.5, "class_names": ["a", "b"]}
    assert path.read_text().endswith("}\n") and '\n  "accuracy"' in path.read_text()
    assert [p.name for p in tmp_path.iterdir()] == [run_dir.METRICS]  # no temporary left


def test_a_failed_write_leaves_the_previous_file_whole(tmp_path):
    run_dir.write_metrics(tmp_path, {"accuracy": 0.5})
    with pytest.raises(TypeError):
        run_dir.write_metrics(tmp_path, {"accuracy": object()})
    assert json.loads((tmp_path / run_dir.METRICS).read_text()) == {"accuracy": 0.5}
    assert [p.name for p in tmp_path.iterdir()] == [run_dir.METRICS]


def test_partial_names_a_sibling_and_backup_names_carry_the_epoch(tmp_path):
    assert run_dir.partial(tmp_path / "x.npz") == tmp_path / "x.npz.partial.npz"
    assert run_dir.BACKUP_WEIGHTS.format(epoch=3) == "weights-0003.npz"
    assert run_dir.BACKUP_BEST_WEIGHTS.format(epoch=12) == "best-0012.npz"


def _metrics_writers():
    """Places in hatt/ outside run_dir.py that name METRICS next to a write call."""
    found = []
    for path in HATT.rglob("*.py"):
        if path.name == "run_dir.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in ("write_text", "write_json", "write_json_atomic", "dump"):
                    if "METRICS" in ast.unparse(node):
                        found.append(f"{path.relative_to(HATT)}:{node.lineno}")
    return found


def test_metrics_json_has_one_writer():
    assert _metrics_writers() == []


def test_self_training_and_resume_names_are_run_dir_names():
    source = (HATT / "training" / "self_training.py").read_text()
    source += (HATT / "training" / "run" / "resume.py").read_text()
    names = ('/ "teacher"', '"teacher_probabilities.npz"', '"pseudo_labels.npz"', '"backup"')
    for literal in (*names, '"pseudo_labels.json"', '"logs"', '"weights-', '"best-'):
        assert literal not in source
