"""Transformer encoder with attention pooling."""

import keras

from hatt.layers import PositionEmbedding, TransformerBlock
from hatt.models import _checks
from hatt.models.spec import FLAT, FamilySpec
from hatt.models.wiring import ApplyMask, ConcatPooling, PaddingMask, pooling_attention


def build_transformer(
    vocabulary_size,
    embedding_dim=64,
    num_layers=2,
    num_heads=4,
    intermediate_dim=128,
    sequence_length=512,
    position_embedding="learned",
    norm_first=False,
    attention_units=None,
    attention_score="dot",
    dropout=0.1,
    pooling=("attention",),
    hidden_dim=None,
    conv_kernel_size=None,
    attention_normalizer="softmax",
    attention_window=None,
    attention_temperature=1.0,
    attention_options=None,
    name="transformer",
):
    """Build a Transformer-encoder classifier pooled by `ContextAttention`.

    `Embedding(mask_zero=True)` (→ `Dense(hidden_dim)` when it differs from
    `embedding_dim`) (→ `+ Conv1D(conv_kernel_size)`, a local convolution
    added to the word vectors) + `hatt.layers.PositionEmbedding` →
    `Dropout` → `num_layers` `hatt.layers.TransformerBlock`s →
    `hatt.layers.ContextAttention` (named `"word_attention"`) → `Dropout`: the
    document vector. `hatt.models.build("transformer", ...)` adds the classification
    head (`hatt.models.head.classifier`).

    Masking: the blocks attend only to real tokens (id != 0), and the
    pooling gives padded positions exactly zero weight (never a mean over
    padding), so the result does not change when a review is padded
    further. An empty review gives a finite probability.

    Args:
        vocabulary_size: Positive int, number of ids (padding and OOV
            included).
        embedding_dim: Positive int, the word vectors' width (and the
            model's, unless `hidden_dim` says otherwise). Defaults to `64`.
        num_layers: Positive int, number of Transformer blocks. Defaults
            to `2`.
        num_heads: Positive int. Defaults to `4`.
        intermediate_dim: Positive int, feed-forward width. Defaults to
            `128`.
        sequence_length: Positive int, the longest review the learned
            position table covers (`position_embedding="learned"`).
            Defaults to `512`.
        position_embedding: `"learned"` or `"sinusoidal"`. Defaults to
            `"learned"`.
        norm_first: Bool, pre-norm blocks. Defaults to `False`.
        attention_units: Positive int or `None`, `units` of the pooling
            attention. Defaults to `None` (`embedding_dim`).
        attention_score: The pooling attention's `score`. Defaults to
            `"dot"`.
        dropout: Float in `[0, 1)`, used after the embeddings, inside the
            blocks and on the document vector. Defaults to `0.1`.
        pooling: Distinct names from `"attention"`, `"max"`, `"mean"`,
            `"attention"` among them: the document vector concatenates these
            poolings of the last block's states, in this order (as in
            `build_rnn`). Defaults to `("attention",)`.
        hidden_dim: Positive int or `None`, the blocks' width, divisible by
            `num_heads`. When it differs from `embedding_dim`, a linear
            projection (`"embedding_projection"`, no bias) maps the word
            vectors to it: wide (frozen) word vectors into a narrow encoder,
            whose cost grows with the square of its width. Defaults to `None`
            (`embedding_dim`).
        conv_kernel_size: Positive int or `None`. When set, a `Conv1D` of
            this width (ReLU, `padding="same"`, over the word vectors with
            padding zeroed, so it does not see past a review's end) is added
            to the word vectors before the positions (`"local_conv"`): each
            token then enters the blocks with its neighbours' n-gram
            features, which self-attention over a few thousand reviews is
            slow to learn. Defaults to `None` (none).
        attention_normalizer: The `normalizer` of the blocks' self-attention
            and of the pooling attention: `"softmax"`, `"sparsemax"` or
            `"entmax15"` (exact zeros for low-scoring words). Defaults to
            `"softmax"`.
        attention_window: Int `m >= 0` or `None`: local self-attention
            (Luong et al.'s local-m), each token attending only to the
            tokens at most `m` positions away (`TransformerBlock`'s
            `window`). Defaults to `None` (the whole review).
        attention_temperature: Positive float: the pooling attention's scores
            are divided by it before the normalizer (`ContextAttention`'s
            `temperature`). Defaults to `1.0`.
        attention_options: `None` or a dict of `ContextAttention`'s local
            and hard options: `{"local_p": True, "window": D}` (Luong et
            al.'s local-p) or `{"hard": "gumbel", "hard_k": k}` (Xu et al.'s
            hard attention; needs the softmax normalizer). Defaults to `None`.
        name: The model's name. Defaults to `"transformer"`.

    Returns:
        A functional `keras.Model` from int ids `[batch, T]` (0 = padding,
        `T <= sequence_length` for learned positions) to the document
        vector `[batch, (hidden_dim or embedding_dim) * len(pooling)]` (the
        backbone; `hatt.models.build` adds the head).

    Example:

    >>> backbone = hatt.models.build_transformer(vocabulary_size=20000)
    >>> backbone.output.shape  # the document vector
    >>> model = hatt.models.build("transformer", vocabulary_size=20000)  # with the head

    References:
        - [Vaswani et al., 2017. Attention Is All You Need](
          https://arxiv.org/abs/1706.03762)
    """
    arguments = dict(locals())  # by name: checked, and read by the pooling attention
    _checks.check_arguments(arguments)
    width = hidden_dim or embedding_dim
    if width % num_heads:
        width_name = "hidden_dim" if hidden_dim else "embedding_dim"
        raise ValueError(
            f"Expected {width_name} to be divisible by num_heads. "
            f"Received: {width_name}={width!r}, num_heads={num_heads!r}"
        )

    # === Layers ===
    padding_mask = PaddingMask(name="padding_mask")
    positions = PositionEmbedding(
        sequence_length=sequence_length, mode=position_embedding, name="position_embedding"
    )
    add_positions = keras.layers.Add(name="add_positions")
    embedding_dropout = keras.layers.Dropout(dropout, name="embedding_dropout")
    blocks = [
        TransformerBlock(
            num_heads=num_heads,
            intermediate_dim=intermediate_dim,
            dropout=dropout,
            norm_first=norm_first,
            normalizer=attention_normalizer,
            window=attention_window,
            name=f"transformer_block_{i}",
        )
        for i in range(num_layers)
    ]
    final_norm = (
        keras.layers.LayerNormalization(epsilon=1e-5, name="final_layer_norm")
        if norm_first
        else None
    )
    pool = ConcatPooling(pooling, pooling_attention("word_attention", arguments))
    dropout_layer = keras.layers.Dropout(dropout, name="dropout")

    # === Functional Model ===
    token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
    mask = padding_mask(token_ids)
    tokens = _word_vectors(token_ids, mask, vocabulary_size, embedding_dim, width, conv_kernel_size)
    x = embedding_dropout(add_positions([tokens, positions(tokens)]))
    for block in blocks:
        x = block(x, mask=mask)
    if final_norm is not None:
        x = final_norm(x)
    document = pool(x, mask)
    return keras.Model(token_ids, dropout_layer(document), name=name)


def _word_vectors(token_ids, mask, vocabulary_size, embedding_dim, width, conv_kernel_size):
    """The blocks' input before the positions: `Embedding` (→ projection) (+ local conv).

    The projection to `width` exists only when it differs from `embedding_dim`;
    the convolution (`conv_kernel_size`) reads the vectors with padding zeroed.
    """
    tokens = keras.layers.Embedding(
        vocabulary_size, embedding_dim, mask_zero=True, name="embedding"
    )(token_ids)
    if width != embedding_dim:
        tokens = keras.layers.Dense(width, use_bias=False, name="embedding_projection")(tokens)
    if conv_kernel_size:
        conv = keras.layers.Conv1D(
            width, conv_kernel_size, padding="same", activation="relu", name="local_conv"
        )
        local = conv(ApplyMask(name="zero_padding")(tokens, mask=mask))
        tokens = keras.layers.Add(name="add_local")([tokens, local])
    return tokens


# === Family spec ===
SPEC = FamilySpec(
    "transformer",
    build_transformer,
    FLAT,
    preset="transformer",
    positional=True,
    imdb_minutes=10.2,
)
