"""Bidirectional RNN with attention pooling."""

import keras

from hatt.layers import SRU
from hatt.models import _checks
from hatt.models.spec import FLAT, FamilySpec
from hatt.models.wiring import (
    ConcatPooling,
    EncoderMask,
    LengthGroupedBidirectional,
    PaddingMask,
    pooling_attention,
)

# The recurrent cells of the rnn and HAN encoders, by the name `cell=` takes.
CELL_CLASSES = {"gru": keras.layers.GRU, "lstm": keras.layers.LSTM, "sru": SRU}
CELLS = tuple(CELL_CLASSES)


def recurrent_layer(cell, units, name, grouped=False):
    """A `Bidirectional` GRU, LSTM or SRU returning sequences, named `name`.

    With `grouped=True` it is a `LengthGroupedBidirectional`: the same
    weights and outputs, but at inference the rows run in groups of similar
    length, each only as many steps as its longest row.
    """
    layer_class = CELL_CLASSES[cell]
    wrapper = LengthGroupedBidirectional if grouped else keras.layers.Bidirectional
    return wrapper(layer_class(units, return_sequences=True, name=f"{name}_{cell}"), name=name)


def cell_of(encoder):
    """The `cell` name (`"gru"`, `"lstm"` or `"sru"`) of a layer from `recurrent_layer`.

    Args:
        encoder: A `Bidirectional` built by `recurrent_layer` (or a reloaded
            one).

    Returns:
        The key of `CELL_CLASSES` whose class the forward layer is.
    """
    for cell, layer_class in CELL_CLASSES.items():
        if type(encoder.forward_layer) is layer_class:
            return cell
    raise ValueError(
        f"Expected an encoder of one of the cells {CELLS}. "
        f"Received: encoder={encoder.name!r} of {type(encoder.forward_layer).__name__}"
    )


def build_rnn(
    vocabulary_size,
    embedding_dim=128,
    units=64,
    num_layers=1,
    cell="gru",
    attention_units=None,
    attention_score="dot",
    dropout=0.3,
    pooling=("attention",),
    word_dropout=0.0,
    attention_normalizer="softmax",
    attention_temperature=1.0,
    attention_options=None,
    name="rnn",
):
    """Build a bidirectional GRU/LSTM/SRU classifier pooled by `ContextAttention`.

    `Embedding(mask_zero=True)` → `num_layers` `Bidirectional` GRUs, LSTMs or
    SRUs (`hatt.layers.SRU`, Lei et al. 2017: the matrix products of all
    steps at once, only element-wise work in the loop)
    → `hatt.layers.ContextAttention` (named `"word_attention"`) →
    `Dropout`: the document vector. `hatt.models.build("rnn", ...)` adds the
    classification head (`hatt.models.head.classifier`). With
    `pooling=("attention", "max", "mean")` the document vector concatenates
    the attention's pooling with masked max- and mean-over-time pooling of
    the same states (ULMFiT's concat pooling, the attention in place of the
    last state).

    Masking: the attention gives padding (id 0) zero weight, so the result
    does not change when a review is padded further. The RNNs run under a
    right-padded mask that always keeps step 0 (see
    `hatt.models.wiring.EncoderMask`), which cuDNN accepts even for an
    empty review; such a review gives zero attention weights, a zero
    document vector and a finite probability.

    Args:
        vocabulary_size: Positive int, number of ids (padding and OOV
            included).
        embedding_dim: Positive int. Defaults to `128`.
        units: Positive int, units of each RNN direction. Defaults to `64`.
        num_layers: Positive int, stacked bidirectional RNNs. Defaults to
            `1`.
        cell: `"gru"`, `"lstm"` or `"sru"` (`hatt.layers.SRU`). Defaults to
            `"gru"`.
        attention_units: Positive int or `None`, `units` of the attention.
            Defaults to `None` (`2 * units`).
        attention_normalizer: The attention's `normalizer`: `"softmax"`,
            `"sparsemax"` or `"entmax15"` (exact zeros for low-scoring
            words). Defaults to `"softmax"`.
        attention_temperature: Positive float: the attention scores are
            divided by it before the normalizer (`ContextAttention`'s
            `temperature`); below 1 a sparse normalizer keeps fewer words.
            Defaults to `1.0`.
        attention_options: `None` or a dict of `ContextAttention`'s local
            and hard options: `{"local_p": True, "window": D}` (Luong et
            al.'s local-p) or `{"hard": "gumbel", "hard_k": k}` (Xu et al.'s
            hard attention; needs the softmax normalizer). Defaults to `None`.
        attention_score: The attention's `score`. Defaults to `"dot"`.
        dropout: Float in `[0, 1)`, dropout on the embeddings and on the
            document vector. Defaults to `0.3`.
        word_dropout: Float in `[0, 1)`, the share of words whose whole
            vector is dropped in training (one mask value a word: the
            model cannot lean on any single word; Gal & Ghahramani's
            embedding dropout drops word types, this drops occurrences).
            Defaults to `0.0`.
        pooling: Distinct names from `"attention"`, `"max"`, `"mean"`,
            `"attention"` among them: the poolings whose outputs are
            concatenated, in this order. Defaults to `("attention",)`.
        name: The model's name. Defaults to `"rnn"`.

    Returns:
        A functional `keras.Model` from int ids `[batch, T]` (0 = padding) to
        the document vector `[batch, 2 * units * len(pooling)]` (the backbone;
        `hatt.models.build` adds the head).

    Example:

    >>> backbone = hatt.models.build_rnn(vocabulary_size=20000, cell="lstm")
    >>> model = hatt.models.build("rnn", vocabulary_size=20000, cell="lstm")  # with the head

    References:
        - [Bahdanau et al., 2015. Neural Machine Translation by Jointly
          Learning to Align and Translate](https://arxiv.org/abs/1409.0473)
        - [Yang et al., 2016. Hierarchical Attention Networks for Document
          Classification](https://aclanthology.org/N16-1174/)
        - [Lei et al., 2017. Simple Recurrent Units for Highly Parallelizable
          Recurrence](https://arxiv.org/abs/1709.02755)
    """
    arguments = dict(locals())  # by name: checked, and read by the pooling attention
    _checks.check_arguments(arguments, cell=CELLS)

    # === Layers ===
    padding_mask = PaddingMask(name="padding_mask")
    encoder_mask = EncoderMask(name="encoder_mask")
    embedding = keras.layers.Embedding(
        vocabulary_size, embedding_dim, mask_zero=True, name="embedding"
    )
    embedding_dropout = keras.layers.Dropout(dropout, name="embedding_dropout")
    # one draw a word: its whole vector is kept (scaled) or zeroed
    word_dropout_layer = keras.layers.Dropout(
        word_dropout, noise_shape=(None, None, 1), name="word_dropout"
    )
    encoders = [recurrent_layer(cell, units, f"encoder_{i}") for i in range(num_layers)]
    pool = ConcatPooling(pooling, pooling_attention("word_attention", arguments))
    dropout_layer = keras.layers.Dropout(dropout, name="dropout")

    # === Functional Model ===
    token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
    mask = padding_mask(token_ids)
    rnn_mask = encoder_mask(mask)
    x = embedding(token_ids)
    if word_dropout:  # only then in the graph: models without it are unchanged
        x = word_dropout_layer(x)
    x = embedding_dropout(x)
    for encoder in encoders:
        x = encoder(x, mask=rnn_mask)
    document = pool(x, mask)
    return keras.Model(token_ids, dropout_layer(document), name=name)


# === Family spec ===
SPEC = FamilySpec("rnn", build_rnn, FLAT, preset="rnn", word_encoder="encoder_0", imdb_minutes=12.9)
