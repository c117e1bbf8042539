"""experiments/channel_tokens.py: the two tokenizations, and a run with --test on made-up reviews."""

import importlib
import json

import pytest

from tests._planted import write_planted_imdb


@pytest.fixture(scope="module")
def channel_tokens():
    return importlib.import_module("experiments.archive.channel_tokens")


def test_mesnil_tokens_keep_punctuation_and_hatt_tokens_drop_it(channel_tokens):
    text = 'Great film!<br />I don\'t "regret" it (at all), really?'
    assert channel_tokens.mesnil_tokens([text]) == [
        ["great", "film", "!", "i", "don't", '"', "regret", '"', "it", "(", "at", "all",
         ")", ",", "really", "?"]
    ]  # fmt: skip
    assert channel_tokens.hatt_tokens([text]) == [
        ["great", "film", "i", "don't", "regret", "it", "at", "all", "really"]
    ]
    assert channel_tokens.grams(["a", "b", "c"]) == ["a", "b", "c", "a b", "b c", "a b c"]


def test_test_column_fits_on_train_and_validation(tmp_path, channel_tokens):
    root = write_planted_imdb(tmp_path, n_train=80, n_test=40)
    results = tmp_path / "results"
    report = channel_tokens.main(
        ["--data", str(root), "--C", "1.0", "--folds", "3", "--tokens", "mesnil", "--test", "--validation-size", "10",
         "--results", str(results), "--name", "tokens"]
    )  # fmt: skip
    saved = json.loads((results / "tokens.json").read_text())
    assert saved == report and [r["tokens"] for r in saved["rows"]] == ["mesnil"]
    row = saved["rows"][0]
    assert row["test_accuracy"] >= 0.9  # the planted cue is found on unseen reviews
    table = (results / "tokens.md").read_text()
    assert "test (fit on train + validation) |" in table
    assert f"| {100 * row['validation_accuracy']:.2f} % | {100 * row['test_accuracy']:.2f} % |" in (
        table
    )
    # without --test the test split is not scored
    plain = channel_tokens.main(
        ["--data", str(root), "--C", "1.0", "--folds", "3", "--tokens", "hatt", "--validation-size", "10",
         "--results", str(results), "--name", "plain"]
    )  # fmt: skip
    assert "test_accuracy" not in plain["rows"][0] and "test" not in plain
