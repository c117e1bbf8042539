"""Kim (2014)-style convolutional document classifier."""

import keras

from hatt.layers import RegionSum
from hatt.models import _checks
from hatt.models.spec import FLAT, FamilySpec
from hatt.models.wiring import ApplyMask, MaxOverTime, PaddingMask, pooling_attention

POOLINGS = ("max", "attention")
WORDS = ("embedding", "one_hot")


def build_cnn(
    vocabulary_size,
    embedding_dim=128,
    kernel_sizes=(3, 4, 5),
    filters=100,
    pooling="max",
    attention_units=None,
    attention_score="dot",
    dropout=0.5,
    words="embedding",
    name="cnn",
):
    """Build a Kim (2014) CNN: parallel convolutions, pooled over time.

    `Embedding` → one `Conv1D` (ReLU, `padding="same"`) per kernel size, run
    in parallel and concatenated → pooling over time → `Dropout`: the
    document vector. `hatt.models.build("cnn", ...)` adds the classification
    head (`hatt.models.head.classifier`).

    Pooling is max-over-time (`pooling="max"`, Kim's choice) or
    `hatt.layers.ContextAttention` (`pooling="attention"`).

    With `words="one_hot"` the convolutions read one-hot words instead of
    embeddings (Johnson & Zhang 2015's seq-CNN): each region of `w` words
    gets its own feature vector, not one built from `embedding_dim`-wide
    word vectors. It is computed from lookups: an `Embedding` named
    `"embedding"` gives each word its `w` kernel rows per width
    (`sum(kernel_sizes) · filters` wide; `embedding_dim` is unused) and
    `hatt.layers.RegionSum` (named `"regions"`) adds them up, exactly a
    `Conv1D(padding="same")` over one-hot words followed by ReLU, at the cost
    of a lookup. The explanation methods read that embedding as they read
    the others.

    Masking: padding (id 0) never reaches the result. Padded embeddings are
    zeroed before the convolutions, so `padding="same"` sees the same zeros
    whatever the batch's length (the result does not change when a review
    is padded further, and reviews shorter than the widest kernel work);
    max-over-time ignores padded steps, and the attention gives them zero
    weight. An empty review gives a finite probability.

    The pooling layer is named `"word_attention"` and is called with
    `return_attention_scores=True`, so `hatt.models.attention_model` can
    read its weights. For max pooling these are, per token, the share of
    feature channels whose maximum lies at that token (sums to 1 over the
    review's tokens); for attention pooling, the attention weights.

    Args:
        vocabulary_size: Positive int, number of ids (padding and OOV
            included).
        embedding_dim: Positive int. Defaults to `128`.
        kernel_sizes: Non-empty list of positive ints, the convolution
            widths. Defaults to `(3, 4, 5)`.
        filters: Positive int, feature maps per width. Defaults to `100`.
        pooling: `"max"` or `"attention"`. Defaults to `"max"`.
        attention_units: Positive int or `None`, `units` of the attention
            (`pooling="attention"` only). Defaults to `None`.
        attention_score: The attention's `score`. Defaults to `"dot"`.
        dropout: Float in `[0, 1)`, dropout on the pooled features.
            Defaults to `0.5`.
        words: `"embedding"` (convolutions over word vectors, Kim's) or
            `"one_hot"` (over one-hot words, Johnson & Zhang's). Defaults to
            `"embedding"`.
        name: The model's name. Defaults to `"cnn"`.

    Returns:
        The backbone (`hatt.models.build` adds the head): a functional
        `keras.Model` from int ids `[batch, T]` (0 = padding) to the document
        vector `[batch, len(kernel_sizes) * filters]`.

    Example:

    >>> backbone = hatt.models.build_cnn(vocabulary_size=20000)
    >>> backbone.output.shape  # the document vector
    >>> model = hatt.models.build("cnn", vocabulary_size=20000)  # with the head

    References:
        - [Kim, 2014. Convolutional Neural Networks for Sentence
          Classification](https://aclanthology.org/D14-1181/)
    """
    arguments = dict(locals())  # by name: checked, and read by the pooling attention
    _checks.check_arguments(arguments, pooling=POOLINGS, words=WORDS)
    if len(set(kernel_sizes)) != len(kernel_sizes):
        raise ValueError(
            f"Expected kernel_sizes to hold distinct widths. Received: kernel_sizes={kernel_sizes!r}"
        )

    # === Layers ===
    padding_mask = PaddingMask(name="padding_mask")
    width = embedding_dim if words == "embedding" else sum(kernel_sizes) * filters
    embedding = keras.layers.Embedding(vocabulary_size, width, name="embedding")
    zero_padding = ApplyMask(name="zero_padding")
    if words == "embedding":
        convolutions = [
            keras.layers.Conv1D(filters, w, padding="same", activation="relu", name=f"conv_{w}")
            for w in kernel_sizes
        ]
    else:
        convolutions = [RegionSum(list(kernel_sizes), activation="relu", name="regions")]
    if pooling == "max":
        pool = MaxOverTime(name="word_attention")
    else:
        pool = pooling_attention("word_attention", arguments)
    dropout_layer = keras.layers.Dropout(dropout, name="dropout")

    # === Functional Model ===
    token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
    mask = padding_mask(token_ids)
    x = zero_padding(embedding(token_ids), mask=mask)
    features = [conv(x) for conv in convolutions]
    if len(features) > 1:
        x = keras.layers.Concatenate(name="concatenate")(features)
    else:
        x = features[0]
    pooled, _ = pool(x, mask=mask, return_attention_scores=True)
    return keras.Model(token_ids, dropout_layer(pooled), name=name)


# === Family spec ===
# max over time unless pooling="attention": its words are not pooled by attention by default
SPEC = FamilySpec(
    "cnn", build_cnn, FLAT, preset="cnn", word_attention=False, xla_predict=True, imdb_minutes=7.6
)
