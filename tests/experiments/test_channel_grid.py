"""experiments/channel_grid.py: a finished run's channel fit again, as hatt train fits it."""

import importlib
import json

import numpy as np
import pytest

from hatt import training
from tests._planted import planted_classes, planted_split


@pytest.fixture(scope="module")
def channel_grid():
    return importlib.import_module("experiments.channel_grid")


def write_table(path, texts, labels):
    with path.open("w", encoding="utf-8") as f:
        for text, label in zip(texts, labels, strict=True):
            f.write(json.dumps({"text": text, "label": label}) + "\n")


def write_polarity(path, split):
    write_table(path, split.texts, [["neg", "pos"][int(label)] for label in split.labels])


def tiny_config(data, ngram, **extra):
    """A one-epoch tiny CNN on the draw ``data / n*.jsonl``, its tuning table as test."""
    (table,) = data.glob("n*.jsonl")
    ngram = {"buckets": 64, "binary": True, "reduction": "sqrt", "init": "nblr", **ngram}
    return training.TrainConfig(
        model="cnn",
        model_kwargs={"embedding_dim": 8, "filters": 8},
        ngram={"fit": "separate", "refit": True, **ngram},
        data=str(table),
        test_data=str(data / "d1-tuning.jsonl"),
        epochs=1,
        batch_size=16,
        min_count=1,
        **extra,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One finished tuning run laid out as mix_tuning lays it out, its tuning table as
    its test split."""
    root = tmp_path_factory.mktemp("runs")
    data = root / "polarity" / "data"
    data.mkdir(parents=True)
    write_polarity(data / "n00200-d1.jsonl", planted_split(200, 0, cue_rate=0.7, lean=0.7))
    write_polarity(data / "d1-tuning.jsonl", planted_split(120, 1, cue_rate=0.7, lean=0.7))
    config = tiny_config(data, {"alpha": 2.0, "C": [1.0, 10.0]})
    training.train(config, root / "polarity" / "n00200-d1" / "cnn", verbose=0)
    return root


def test_the_runs_own_settings_give_its_saved_channel_and_a_grid_is_searched(
    tmp_path, channel_grid, runs
):
    out = tmp_path / "out"
    grid = {"alpha": [0.25, 4.0], "C": [0.1, 100.0]}
    argv = ["--runs", str(runs), "--out", str(out), "--variant", f"grid={json.dumps(grid)}"]
    channel_grid.main(argv)
    result = json.loads((out / "channel_grid.json").read_text())
    (run,) = result["runs"]
    own, searched = run["variants"]["run"], run["variants"]["grid"]
    assert own["max_difference"] < 1e-5  # fit exactly as hatt train fit it
    # the run variant's mix is the rule in force, as mix_tuning scores it
    in_force = importlib.import_module("experiments.mix_tuning").tuning_scores(run["run_dir"])
    assert own["accuracy"] == pytest.approx(in_force[channel_grid.mix_rule.TODAY]["accuracy"])
    # a run of 200 reviews: the grid is searched by folds of its training split, as hatt
    # train searches it (ngram.folds "auto"), every point scored on every fold
    points = searched["fit"]["cross_validation"]["points"]
    assert [(e["alpha"], e["C"]) for e in points] == [
        (a, c) for a in grid["alpha"] for c in grid["C"]
    ]
    assert all(len(e["fold_accuracies"]) == 5 for e in points)
    chosen = (searched["fit"]["alpha"], searched["fit"]["C"])
    assert (searched["fit"]["refit"]["alpha"], searched["fit"]["refit"]["C"]) == chosen
    table = (out / "channel_grid.md").read_text()
    assert f"| grid | `{json.dumps(grid)}` | 1 | {100 * searched['accuracy']:.2f} % |" in table
    # cached beside the run: a second report fits nothing again
    cached = json.loads((runs / "polarity" / "n00200-d1" / "cnn" / "channel-grid.json").read_text())
    assert cached["fit"]["cross_validation"] == searched["fit"]["cross_validation"]
    with np.load(runs / "polarity" / "n00200-d1" / "cnn" / "channel-run.npz") as saved:
        own_logits = {split: saved[split] for split in ("validation", "test")}
    for split, logits in own_logits.items():
        recorded = channel_grid.mix_rule.load_split(run["run_dir"], split)[1]
        np.testing.assert_allclose(logits, recorded, atol=1e-5)
    channel_grid.main(argv)
    assert json.loads((out / "channel_grid.json").read_text()) == result


def test_a_bad_variant_is_refused(channel_grid):
    with pytest.raises(SystemExit, match="not JSON"):
        channel_grid.parse_variants(["wide={alpha: 1}"])
    with pytest.raises(SystemExit, match="NAME=JSON"):
        channel_grid.parse_variants(["run={}"])
    assert np.isclose(channel_grid.parse_variants(['a={"alpha": 0.5}'])["a"]["alpha"], 0.5)


def test_a_run_whose_preset_changed_for_its_classes_is_fit_as_it_ran(tmp_path, channel_grid):
    """A 3-class run whose alpha and C came from the preset: hatt train replaced them
    (scale.MULTICLASS_NGRAM), and the run variant fits the channel with those, not the
    preset's recorded in config.json."""
    root = tmp_path / "runs"
    data = root / "rating" / "data"
    data.mkdir(parents=True)
    for name, (n, seed) in {"n00150-d1": (150, 0), "d1-tuning": (90, 1)}.items():
        write_table(data / f"{name}.jsonl", *planted_classes(n, seed))
    ngram = {"alpha": 2.0, "C": [100.0, 300.0]}
    config = tiny_config(data, ngram, scale=["ngram.alpha", "ngram.C"])  # as a preset's
    run_dir = root / "rating" / "n00150-d1" / "cnn"
    training.train(config, run_dir, verbose=0)
    assert json.loads((run_dir / "ngram_channel.json").read_text())["alpha"] == 0.5
    channel_grid.main(["--runs", str(root), "--out", str(tmp_path / "out")])
    (run,) = json.loads((tmp_path / "out" / "channel_grid.json").read_text())["runs"]
    own = run["variants"]["run"]
    assert own["fit"]["alpha"] == 0.5 and own["max_difference"] < 1e-5


def test_a_layer_setting_reads_the_features_a_run_with_it_would_fit(tmp_path, channel_grid, runs):
    """The variant {"order": 1, "reduction": "sum"} of the module's run gives the channel
    that a run trained with those settings fit: the deep part does not touch it."""
    run_dir = runs / "polarity" / "n00200-d1" / "cnn"
    config = training.TrainConfig.from_dict(json.loads((run_dir / "config.json").read_text()))
    assert config.ngram.order != 1 and config.ngram.reduction != "sum"
    layer = {"order": 1, "reduction": "sum", "C": [0.1, 1.0]}
    other = tiny_config(runs / "polarity" / "data", {"alpha": 2.0, **layer})
    training.train(other, tmp_path / "unigrams", verbose=0)
    argv = ["--runs", str(runs), "--out", str(tmp_path / "out")]
    channel_grid.main([*argv, "--variant", f"unigrams={json.dumps(layer)}"])
    with np.load(run_dir / "channel-unigrams.npz") as saved:
        for split in ("validation", "test"):
            expected = channel_grid.mix_rule.load_split(tmp_path / "unigrams", split)[1]
            np.testing.assert_allclose(saved[split], expected, atol=1e-5)
            own = channel_grid.mix_rule.load_split(run_dir, split)[1]
            assert np.abs(saved[split] - own).max() > 1e-3  # other features, other logits
