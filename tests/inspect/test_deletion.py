"""The deletion test (hatt.inspect.deletion): ERASER comprehensiveness and sufficiency.

Against a NumPy reference on a hand-set bag-of-words model (a fake
``TextModel`` with the contract's ``explain_from_ids``), and on tiny trained
models that key on a planted word.
"""

import numpy as np
import pytest
import tensorflow as tf

from hatt import export
from hatt.inspect import deletion_test
from hatt.inspect.deletion import (
    RANDOM,
    _delete,
    _edits,
    _length_batches,
    _probabilities_by_length,
    _rebuild,
    deletion_count,
    method_scores,
)
from tests.conftest import planted

# === A hand-set model: z = Σ w[id] + b, p(class 1) = sigmoid(z) =======================

WEIGHTS = np.array([0.0, 0.2, 3.0, -4.0, 0.5, -0.5, 1.5, -2.0, 0.8, -0.1, 0.05, 2.5])
BIAS = -0.3


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


class LinearText:
    """A fake TextModel: reviews are ids written out ("2 4 4 | 5 6": "|" ends a sentence).

    Signed scores are exact: a word's contribution to ``z_c`` (``z_1 = z``,
    ``z_0 = -z``); attention is unsigned (``|w|``, normalised per sentence)
    and, nested, the sentences get weights 1, 2, 3, ... normalised.
    """

    def __init__(self, nested=False):
        self.nested = nested

    def ragged_ids(self, texts):
        reviews = [t.decode() for t in texts.numpy()]
        if self.nested:
            nested = [[[int(w) for w in s.split()] for s in r.split("|")] for r in reviews]
            return tf.ragged.constant(nested, dtype=tf.int32, ragged_rank=2)
        return tf.ragged.constant([[int(w) for w in r.split()] for r in reviews], dtype=tf.int32)

    def _logits(self, ragged):
        flat = ragged.merge_dims(1, 2) if self.nested else ragged
        return np.array([WEIGHTS[np.asarray(r, np.int64)].sum() + BIAS for r in flat.to_list()])

    def probabilities_from_ids(self, ragged):
        positive = _sigmoid(self._logits(ragged))
        return np.stack([1 - positive, positive], axis=-1).astype(np.float32)

    def explain_from_ids(self, ragged, steps=None):
        ids = ragged.to_tensor().numpy()
        probabilities = self.probabilities_from_ids(ragged)
        target = np.argmax(probabilities, axis=-1)
        sign = np.where(target == 1, 1.0, -1.0).reshape((-1,) + (1,) * (ids.ndim - 1))
        signed = WEIGHTS[ids] * sign * (ids != 0)
        size = np.abs(WEIGHTS[ids]) * (ids != 0)
        totals = size.sum(axis=-1, keepdims=True)
        out = {
            "probabilities": probabilities,
            "target": target.astype(np.int32),
            "attention": np.divide(size, totals, out=np.zeros_like(size), where=totals > 0),
            "gradient_x_input": signed,
            "integrated_gradients": signed,
            "ig_completeness_error": ids.reshape(len(ids), -1).sum(axis=-1) / 1000.0,
        }
        if self.nested:
            present = (ids != 0).any(axis=-1) * np.arange(1, ids.shape[1] + 1)
            out["sentence_attention"] = present / present.sum(axis=-1, keepdims=True)
        return out


def fake_predictor(nested=False, family="rnn"):
    """A real Predictor over the fake TextModel, with three of the methods."""
    predictor = export.Predictor(
        None, family=family, score_kind="attention", source=".", kind="keras",
        text_model=LinearText(nested),
    )  # fmt: skip
    predictor.methods = ("attention", "gradient_x_input", "integrated_gradients")
    return predictor


FLAT_REVIEWS = [
    "2 3 4 4 4 4 4 4 4 4",  # z > 0: "2" (+3) supports class 1, "3" (-4) argues against it
    "5 2 7 7 1 9 10 11 6 3 4 8 1 1 9 5 10 2 6 7",
    "3 4 9",
    "6",
    "7 7 5 2 10 9 9 1 8 3 11 4 5",
]


def _reference(review_ids, scores, k):
    """Comprehensiveness and sufficiency of ranking ``scores`` (NumPy, one review)."""
    ids = np.asarray(review_ids)
    z = WEIGHTS[ids].sum() + BIAS
    c = int(_sigmoid(z) >= 0.5)

    def p_c(kept):
        p = _sigmoid(WEIGHTS[kept].sum() + BIAS)
        return p if c == 1 else 1 - p

    count = deletion_count(k, len(ids))
    top = np.argsort(-np.asarray(scores), kind="stable")[:count]
    removed = np.delete(ids, top)
    kept = ids[np.sort(top)]
    return p_c(ids) - p_c(removed), p_c(ids) - p_c(kept)


def _reference_scores(ids, method):
    ids = np.asarray(ids)
    sign = 1.0 if WEIGHTS[ids].sum() + BIAS >= 0 else -1.0
    if method == "attention":
        return np.abs(WEIGHTS[ids]) / np.abs(WEIGHTS[ids]).sum()
    return WEIGHTS[ids] * sign


# === Pure steps ========================================================================


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


def test_edits_remove_the_top_or_keep_only_it_in_order():
    review = (np.array([5, 6, 7, 8, 9], np.int32), [2, 1, 2])
    scores = {"m": [np.array([0.1, 0.9, -1.0, 0.8, 0.2])]}
    keys, edited = _edits([review], scores, (40,), 1, np.random.default_rng(0))
    assert keys[:2] == [(0, "m", 40, "comprehensiveness"), (0, "m", 40, "sufficiency")]
    assert [k[1] for k in keys[2:]] == [RANDOM, RANDOM]
    (removed, removed_lengths), (kept, kept_lengths) = edited[:2]
    assert removed.tolist() == [5, 7, 9] and removed_lengths == [1, 1, 1]
    assert kept.tolist() == [6, 8] and kept_lengths == [1, 0, 1]  # in order, not by rank
    (r_removed, _), (r_kept, _) = edited[2:]  # the same random pair: complements
    assert sorted([*r_removed, *r_kept]) == [5, 6, 7, 8, 9] and len(r_kept) == 2


def test_method_scores_are_flat_and_han_attention_is_word_times_sentence():
    predictor = fake_predictor(nested=True, family="han")
    ragged = predictor.ragged_ids(["2 3 | 4 | 5 6 7", "8"])
    scored = method_scores(predictor, ragged, ("attention", "gradient_x_input"), batch_size=1)
    word = np.abs(WEIGHTS[[2, 3]]) / np.abs(WEIGHTS[[2, 3]]).sum()
    tail = np.abs(WEIGHTS[[5, 6, 7]]) / np.abs(WEIGHTS[[5, 6, 7]]).sum()
    expected = np.concatenate([word * 1 / 6, [1.0 * 2 / 6], tail * 3 / 6])
    np.testing.assert_allclose(scored["scores"]["attention"][0], expected)
    sign = 1.0 if WEIGHTS[[2, 3, 4, 5, 6, 7]].sum() + BIAS >= 0 else -1.0
    np.testing.assert_allclose(
        scored["scores"]["gradient_x_input"][0], WEIGHTS[[2, 3, 4, 5, 6, 7]] * sign
    )
    assert [len(s) for s in scored["scores"]["attention"]] == [6, 1]
    assert scored["target"].tolist() == [int(WEIGHTS[[2, 3, 4, 5, 6, 7]].sum() + BIAS > 0), 1]
    np.testing.assert_allclose(scored["ig_completeness_error"], [0.027, 0.008])


# === The test against a NumPy reference ================================================


@pytest.mark.parametrize("nested", [False, True])
def test_comprehensiveness_sufficiency_and_aopc_match_numpy(nested):
    reviews = [_in_sentences(r) if nested else r for r in FLAT_REVIEWS]
    ks = (5, 10, 20, 50)
    result = deletion_test(
        fake_predictor(nested), reviews, ks=ks, random_draws=3, seed=0, progress=False,
        chunk_size=2, batch_size=3,
    )  # fmt: skip
    assert result["aopc_bins"] == list(ks) and result["reviews"] == len(reviews)
    ids = [[int(w) for w in r.replace("|", " ").split()] for r in reviews]
    sentences = [[len(s.split()) for s in r.split("|")] for r in reviews]
    for method in ("attention", "gradient_x_input", "integrated_gradients"):
        found = result["by_method"][method]
        aopc = {"comprehensiveness": [], "sufficiency": []}
        for k in ks:
            pairs = [
                _reference(r, _scores(r, method, s, nested), k)
                for r, s in zip(ids, sentences, strict=True)
            ]
            comprehensiveness, sufficiency = np.mean(pairs, axis=0)
            row = found["by_k"][str(k)]
            assert row["comprehensiveness"] == pytest.approx(comprehensiveness, abs=1e-6)
            assert row["sufficiency"] == pytest.approx(sufficiency, abs=1e-6)
            chance = result["by_method"][RANDOM]["by_k"][str(k)]["comprehensiveness"]
            assert row["ratio"] == pytest.approx(row["comprehensiveness"] / chance)
            aopc["comprehensiveness"].append(comprehensiveness)
            aopc["sufficiency"].append(sufficiency)
        for metric, values in aopc.items():
            assert found[f"aopc_{metric}"] == pytest.approx(np.mean(values), abs=1e-6)
    errors = [sum(r) / 1000 for r in ids]
    assert result["ig_completeness_error"]["median"] == pytest.approx(np.median(errors))
    assert result["ig_completeness_error"]["p95"] == pytest.approx(np.percentile(errors, 95))


def _in_sentences(review):
    """A review's first three words, then the rest, as two sentences."""
    words = review.split()
    return review if len(words) <= 3 else " ".join([*words[:3], "|", *words[3:]])


def _scores(ids, method, sentence_lengths, nested):
    if not (nested and method == "attention"):
        return _reference_scores(ids, method)
    bounds = np.cumsum([0, *sentence_lengths])
    count = len(sentence_lengths)
    parts = [
        _reference_scores(ids[a:b], method) * (s + 1) / (count * (count + 1) / 2)
        for s, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True))
    ]
    return np.concatenate(parts)


def test_everything_removed_is_the_same_for_every_method_and_random():
    result = deletion_test(
        fake_predictor(), FLAT_REVIEWS, ks=(100,), random_draws=2, progress=False
    )
    everything = [row["by_k"]["100"] for row in result["by_method"].values()]
    assert len(everything) == 4  # three methods and random
    for row in everything:
        assert row["comprehensiveness"] == pytest.approx(everything[0]["comprehensiveness"])
        assert row["sufficiency"] == 0.0 and row["sufficiency_flip_rate"] == 0.0


def test_signed_methods_rank_the_most_supportive_word_first():
    # Review 0: z = 3 - 4 + 8 * 0.5 - 0.3 > 0. Its top 10 % (one word) is "2" (+3) for the
    # signed methods, but "3" (|-4|) for attention, which cannot tell for from against.
    # Review 1 mirrors it for class 0: "7" (-2) supports class 0 most, "11" (+2.5) argues
    # against it most.
    reviews = ["2 3 4 4 4 4 4 4 4 4", "7 11 5 5 5 5 5 5 5 5"]
    result = deletion_test(fake_predictor(), reviews, ks=(10,), random_draws=1, progress=False)
    signed = result["by_method"]["gradient_x_input"]["by_k"]["10"]
    attention = result["by_method"]["attention"]["by_k"]["10"]
    expected = np.mean([_reference(ids, scores, 10)[0] for ids, scores in [
        ([2, 3, 4, 4, 4, 4, 4, 4, 4, 4], [3, -4, *[0.5] * 8]),
        ([7, 11, 5, 5, 5, 5, 5, 5, 5, 5], [2, -2.5, *[0.5] * 8]),
    ]])  # fmt: skip
    assert signed["comprehensiveness"] == pytest.approx(expected, abs=1e-6)
    assert signed["comprehensiveness"] > 0.2 > 0 > attention["comprehensiveness"]


def test_deletion_test_rejects_bad_settings():
    predictor = fake_predictor()
    for bad in ((0,), (5, 5), (101,), ("a",), ()):
        with pytest.raises(ValueError, match=r"ks="):
            deletion_test(predictor, ["2"], ks=bad, progress=False)
    with pytest.raises(ValueError, match="random_draws"):
        deletion_test(predictor, ["2"], random_draws=0, progress=False)
    with pytest.raises(ValueError, match="chunk_size=0"):
        deletion_test(predictor, ["2"], chunk_size=0, progress=False)
    with pytest.raises(ValueError, match=r"methods=\['ngram'\]"):
        deletion_test(predictor, ["2"], methods=["ngram"], progress=False)
    only = deletion_test(predictor, ["2 3"], methods=["attention", RANDOM], progress=False)
    assert (
        list(only["by_method"]) == ["attention", RANDOM] and only["ig_completeness_error"] is None
    )


# === Tiny trained models: the planted word decides =====================================


@pytest.mark.parametrize("family", ["cnn", "han"])
def test_on_tiny_models_ig_and_ngram_find_the_planted_word(tiny, family):
    texts = planted(24, 7).texts
    predictor = export.load(tiny[family].run_dir)  # the loader hatt inspect uses
    result = deletion_test(predictor, texts, ks=(10,), random_draws=3, steps=8, progress=False)
    assert result["reviews"] == 24 and result["family"] == family
    assert result["methods"] == list(predictor.methods)
    chance = result["by_method"][RANDOM]["by_k"]["10"]
    # Not gradient x input: the tiny HAN is saturated (p > 0.9999), where the local gradient
    # gives the planted word a negative score (measured: -0.2) while IG's path does not.
    for method in ("integrated_gradients", "ngram"):
        ten = result["by_method"][method]["by_k"]["10"]
        # The top word is the planted one: removing it flips most predictions, and keeping
        # the top 10 % alone keeps them; 10 % random words rarely hold it.
        assert ten["comprehensiveness"] > 0.3 and ten["comprehensiveness"] > 3 * max(
            chance["comprehensiveness"], 0.01
        ), method
        assert ten["sufficiency"] < chance["sufficiency"], method
        assert ten["comprehensiveness_flip_rate"] > chance["comprehensiveness_flip_rate"]
        assert 0.0 <= ten["below_random"] < 0.5 and 0.0 <= ten["both_negligible"] <= 1.0
    assert result["ig_completeness_error"]["median"] < 0.05
    # the model in memory (its TextModel), in other batches and chunks, gives the same; the
    # same TextModel, so its traced explanations are reused (a HAN's trace: 20 s)
    again = deletion_test(
        predictor.text_model, texts, ks=(10,), random_draws=3, steps=8, progress=False,
        batch_size=5, chunk_size=7,
    )  # fmt: skip
    for method, found in result["by_method"].items():
        for key, value in found["by_k"]["10"].items():
            assert again["by_method"][method]["by_k"]["10"][key] == pytest.approx(
                value, abs=1e-5
            ), (method, key)


@pytest.mark.parametrize("nested", [False, True])
def test_batches_of_similar_length_give_every_review_its_own_results(nested):
    """Reviews are explained and scored in batches sorted by length, then put back in order."""
    predictor = fake_predictor(nested=nested, family="han" if nested else "rnn")
    texts = [t.replace(" 4 ", " | 4 ") if nested else t for t in FLAT_REVIEWS]
    ragged = predictor.ragged_ids(texts)
    methods = ("attention", "gradient_x_input")
    one_by_one = method_scores(predictor, ragged, methods, batch_size=1)
    sorted_batches = method_scores(predictor, ragged, methods, batch_size=2)
    np.testing.assert_array_equal(sorted_batches["target"], one_by_one["target"])
    np.testing.assert_allclose(
        sorted_batches["ig_completeness_error"], one_by_one["ig_completeness_error"]
    )
    for method in methods:
        got, want = sorted_batches["scores"][method], one_by_one["scores"][method]
        assert len(got) == len(want) == len(texts)
        for mine, theirs in zip(got, want, strict=True):
            np.testing.assert_allclose(mine, theirs)
    lengths = [len(t.replace("|", "").split()) for t in texts]
    batches = list(_length_batches(ragged, 2))
    assert [len(chosen) for chosen, _ in batches] == [2, 2, 1]
    assert [lengths[i] for chosen, _ in batches for i in chosen] == sorted(lengths)
    probabilities = _probabilities_by_length(predictor, ragged, 2)
    np.testing.assert_allclose(probabilities, predictor.text_model.probabilities_from_ids(ragged))
    assert _probabilities_by_length(predictor, ragged[:0], 2).shape[0] == 0
