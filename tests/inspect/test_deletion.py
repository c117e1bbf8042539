"""The deletion test (hatt.inspect.deletion) on tiny models that key on a planted word."""

import numpy as np
import pytest

from hatt import export
from hatt.inspect import deletion_test
from hatt.inspect.deletion import _delete, _rebuild, deletion_count
from tests.conftest import planted


def test_deletion_count_rounds_half_up_and_keeps_at_least_one():
    assert [deletion_count(10, n) for n in (0, 1, 4, 5, 15, 25, 400)] == [0, 1, 1, 1, 2, 3, 40]
    assert deletion_count(20, 3) == 1 and deletion_count(100, 7) == 7


def test_deleting_removes_tokens_and_empty_sentences():
    flat = np.array([5, 6, 7, 8, 9], np.int32)
    assert _delete(flat, None, [0, 3])[0].tolist() == [6, 7, 9]
    ids, lengths = _delete(flat, [2, 1, 2], [2, 3])  # sentence 2 loses its only word
    assert ids.tolist() == [5, 6, 9] and lengths == [2, 0, 1]
    nested = _rebuild([(ids, lengths), (flat, [5])], nested=True)
    assert nested.to_list() == [[[5, 6], [9]], [[5, 6, 7, 8, 9]]]
    assert _rebuild([(ids, None)], nested=False).to_list() == [[5, 6, 9]]


@pytest.mark.parametrize("family", ["cnn", "han"])
def test_ranked_deletion_drops_more_than_random(tiny, family):
    texts = planted(24, 7).texts
    predictor = export.load(tiny[family].run_dir)  # the loader hatt inspect uses
    result = deletion_test(predictor, texts, ks=(10,), random_draws=3, seed=0, progress=False)
    ten = result["by_k"]["10"]
    assert result["reviews"] == 24 and result["family"] == family
    # The top token is the planted word: deleting it flips the prediction most of the time,
    # while deleting 10 % random tokens rarely hits it.
    assert ten["ranked_drop"] > 0.3
    assert ten["ranked_drop"] > 3 * max(ten["random_drop"], 0.01)
    assert ten["ranked_flip_rate"] > ten["random_flip_rate"]
    assert 0.0 <= ten["ranked_below_random"] < 0.5 and 0.0 <= ten["both_negligible"] <= 1.0
    # seeded; and the in-memory model, in batches of 5, is the same model
    model, vectorizer = tiny[family].model, tiny[family].vectorizer
    again = deletion_test(
        model, texts, ks=(10,), random_draws=3, seed=0, progress=False, vectorizer=vectorizer,
        batch_size=5, chunk_size=7,
    )  # fmt: skip
    for key, value in result["by_k"]["10"].items():
        assert again["by_k"]["10"][key] == pytest.approx(value, abs=1e-5), key


def test_deletion_test_rejects_bad_settings(tiny):
    explainer = export.load(tiny["rnn"].run_dir)
    with pytest.raises(ValueError, match="ks"):
        deletion_test(explainer, ["a"], ks=(0,), progress=False)
    with pytest.raises(ValueError, match="random_draws"):
        deletion_test(explainer, ["a"], random_draws=0, progress=False)
    empty = deletion_test(explainer, ["", "superb"], ks=(5,), progress=False)
    assert np.isfinite(empty["by_k"]["5"]["ranked_drop"])


def test_faithfulness_script_writes_json_and_markdown(tiny, tmp_path, monkeypatch):
    import json
    from pathlib import Path

    from tests._scripts import load_experiment
    from tests.data.conftest import write_tiny_imdb

    module = load_experiment("faithfulness")
    monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))
    root = write_tiny_imdb(tmp_path / "corpus")
    runs = Path(tiny["han"].run_dir).parent
    assert tiny["cnn"].run_dir.parent == runs  # holds han/ and cnn/
    argv = ["--runs", str(runs), "--families", "cnn", "han", "--data", str(root),
            "--reviews", "4", "--draws", "2", "--out", str(tmp_path / "results")]  # fmt: skip
    module.main(argv)
    saved = json.loads((tmp_path / "results" / "faithfulness.json").read_text())
    assert saved["reviews"] == 4 and list(saved["models"]) == ["cnn", "han"]
    assert saved["models"]["cnn"]["score_kind"] == "saliency"
    assert set(saved["models"]["han"]["by_k"]) == {"5", "10", "20"}
    table = (tmp_path / "results" / "faithfulness.md").read_text()
    assert "| cnn | saliency |" in table and "| han | attention |" in table
