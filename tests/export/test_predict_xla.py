"""The CNN's `predict` path runs its classifier under XLA: the same probabilities as the plain
classifier on the same ids, for batch sizes that are and are not powers of two."""

import numpy as np
import tensorflow as tf

import hatt
from hatt import export
from hatt.data import Vectorizer

TEXTS = [
    "a great film, truly great.",
    "awful acting and a dull plot",
    "",
    "great great awful " * 40,
    "fine",
]


def test_cnn_classify_under_xla_equals_the_plain_classifier():
    vectorizer = Vectorizer(max_tokens=50, output_mode="flat", sequence_length=12)
    vectorizer.adapt(TEXTS)
    for words, widths in (("one_hot", [3]), ("embedding", [2, 3])):
        model = hatt.models.build(
            "cnn",
            vocabulary_size=vectorizer.vocabulary_size,
            words=words,
            kernel_sizes=widths,
            filters=4,
            embedding_dim=8,
        )
        text_model = export.TextModel(model, vectorizer)
        for size in (1, 3, 5):
            batch = tf.constant(TEXTS[:size])
            ids = vectorizer.densify(vectorizer.ragged_ids(batch))
            plain = np.asarray(model(ids, training=False)).reshape(-1)
            fast = text_model.classify(batch)
            assert fast["probability"].shape == (size,)
            np.testing.assert_allclose(fast["probability"], plain, atol=1e-6, rtol=0)
            np.testing.assert_allclose(
                np.asarray(fast["probabilities"]).sum(-1), 1.0, atol=1e-6, rtol=0
            )
