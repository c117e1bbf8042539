"""experiments/attention_variants.py: the sparsity statistics against hand-computed values."""

import importlib
import json

import numpy as np

av = importlib.import_module("experiments.attention_variants")


def test_zero_shares_and_entropies_over_real_positions_only():
    tokens = np.array(
        [[["a", "b", "c", "d"], ["e", "f", "", ""]], [["g", "", "", ""], ["", "", "", ""]]]
    )
    words = np.array(
        [[[0.25, 0.25, 0.25, 0.25], [1.0, 0.0, 0.0, 0.0]], [[1.0, 0, 0, 0], [0, 0, 0, 0]]]
    )
    sentences = np.array([[0.5, 0.5], [1.0, 0.0]])
    out = {"tokens": tokens, "word_attention": words, "sentence_attention": sentences}
    stats = av.attention_statistics(out)
    assert stats["word_zero_share"] == 1 / 7  # "f" of the 7 real words
    # uniform over 4 words: 1; one-hot over 2: 0; one word alone: left out
    np.testing.assert_allclose(stats["word_entropies"], [1.0, 0.0])
    assert stats["sentence_zero_share"] == 0.0  # the empty sentence is not a real one
    np.testing.assert_allclose(stats["sentence_entropies"], [1.0])


def test_the_report_is_generated_from_the_rows(tmp_path):
    row = {
        "name": "han-x",
        "test_accuracy": 0.9,
        "deep_test_accuracy": 0.88,
        "deletion_k10": {"ratio": 12.34},
        "word_zero_share": 0.5,
        "word_entropy": 0.4,
        "sentence_zero_share": 0.25,
        "sentence_entropy": 0.9,
        "uniform": {"learned_accuracy": 0.91, "uniform_accuracy": 0.9},
        "train_reviews_per_second": 300.0,
        "predict_reviews_per_second": 200.0,
        "train_command": "hatt train han",
        "reviews": 300,
    }
    (tmp_path / "han-x.json").write_text(json.dumps(row))
    av.write_reports(tmp_path)
    table = (tmp_path / "attention_variants.md").read_text()
    assert "| han-x | 90.00 % | 88.00 % | 12.3× | 50.0 % / 25.0 % | 0.400 / 0.900 |" in table
    assert json.loads((tmp_path / "attention_variants.json").read_text()) == [row]
