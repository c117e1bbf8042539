"""experiments/beside_baselines.py: the reports' saved figures beside the baselines."""

import importlib
import json

import pytest


@pytest.fixture(scope="module")
def beside():
    return importlib.import_module("experiments.beside_baselines")


def write_json(path, value):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))
    return path


def test_a_later_report_replaces_runs_and_draws_are_set_beside_their_baselines(tmp_path, beside):
    runs = tmp_path / "runs"
    for draw, (nb, tfidf) in {1: (0.30, 0.34), 2: (0.40, 0.36)}.items():
        place = runs / "rating" / f"n01000-d{draw}"
        write_json(place / "nb_lr.json", {"test_accuracy": nb})
        write_json(place / "tfidf_lr.json", {"test_accuracy": tfidf})
    old = [  # a mix_tuning report, made where its runs were (another root)
        {"run_dir": f"/elsewhere/rating/n01000-d{d}/cnn", "tuning": {"anchored": {"accuracy": a}}}
        for d, a in ((1, 0.10), (2, 0.20), (3, 0.99))
    ]
    new = [  # a channel_grid report that rescored draw 2
        {"run_dir": "runs/mix_tuning/rating/n01000-d2/cnn", "variants": {"v": {"accuracy": 0.41}}}
    ]
    first = write_json(tmp_path / "old.json", {"runs": old})
    second = write_json(tmp_path / "new.json", {"rule": "held", "runs": new})
    out = tmp_path / "out"
    argv = ["--runs", str(runs), "--out", str(out), "--from", f"{first}=anchored"]
    beside.main([*argv, "--from", f"{second}=v"])
    result = json.loads((out / "beside_baselines.json").read_text())
    rows = {row["draw"]: row for row in result["draws"]}
    assert rows[1] == {
        "group": "rating 1000",
        "draw": 1,
        "cnn": 0.10,
        "nb_lr": 0.30,
        "tfidf_lr": 0.34,
    }
    assert rows[2]["cnn"] == 0.41 and rows[3] == {"group": "rating 1000", "draw": 3, "cnn": 0.99}
    table = (out / "beside_baselines.md").read_text()
    # draws 1 and 2: hatt (0.10 + 0.41) / 2, the better baseline (0.34 + 0.40) / 2
    assert "| rating 1000 | cnn | 2 | 25.50 % | 35.00 % | 35.00 % | **-11.50** |" in table
    assert "Draws without both baselines: rating 1000 d3." in table
    assert "the variant 'v' under 'held'" in table and "the rule 'anchored'" in table
    # the command it names writes it again: a key with spaces quoted, a name given
    beside.main([*argv, "--from", f"{second}=v", "--name", "both draws"])
    shown = f"--from {first}=anchored --from {second}=v --name 'both draws'`"
    assert shown in (out / "both draws.md").read_text()
    held = [
        {"run_dir": r["run_dir"], "tuning": {"anchored, biases held": {"accuracy": 0.5}}}
        for r in old
    ]
    third = write_json(tmp_path / "held.json", {"runs": held})
    beside.main([*argv[:4], "--from", f"{third}=anchored, biases held"])
    assert f"--from '{third}=anchored, biases held'`" in (out / "beside_baselines.md").read_text()
    with pytest.raises(SystemExit, match="without 'always'"):
        beside.main([*argv[:4], "--from", f"{first}=always"])
    with pytest.raises(SystemExit, match="REPORT=KEY"):
        beside.main([*argv[:4], "--from", "nothing"])
