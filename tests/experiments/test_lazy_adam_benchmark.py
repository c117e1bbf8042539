"""experiments/benchmarks/lazy_adam.py on a tiny setting: both optimizers timed, files written."""

import json

from experiments.benchmarks import lazy_adam


def test_times_both_optimizers_and_writes_its_files(tmp_path):
    argv = ["--filters", "4", "8", "--vocabulary", "300", "--batch", "4", "--length", "40",
            "--steps", "3", "--warmup", "1", "--out", str(tmp_path)]  # fmt: skip
    report = lazy_adam.main(argv)
    assert json.loads((tmp_path / "lazy_adam.json").read_text()) == report
    assert [r["filters"] for r in report["rows"]] == [4, 8]
    for row in report["rows"]:
        assert row["parameters"] > 300 * 3 * row["filters"]  # the one-hot table: V x 3 x filters
        assert set(row["median_seconds"]) == {"adam", "lazy_adam"}
        assert all(s > 0 for s in row["median_seconds"].values())
    batches = lazy_adam.batches(lazy_adam.parse_args(argv))
    assert len(batches) == 4 and all(ids.max() < 300 and ids[:, 0].min() >= 2 for ids, _ in batches)
    assert "| 8 |" in (tmp_path / "lazy_adam.md").read_text()
