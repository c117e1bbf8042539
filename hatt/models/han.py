"""Hierarchical Attention Network (Yang et al. 2016)."""

import keras

from hatt.models import _checks
from hatt.models.rnn import CELLS, recurrent_layer
from hatt.models.spec import NESTED, FamilySpec
from hatt.models.wiring import (
    ConcatPooling,
    EncoderMask,
    FoldSentences,
    GatherSentences,
    PaddingMask,
    UnfoldSentences,
    pooling_attention,
)


def build_han(
    vocabulary_size,
    embedding_dim=100,
    word_units=50,
    sentence_units=50,
    cell="gru",
    attention_units=None,
    attention_score="dot",
    dropout=0.3,
    word_pooling=("attention",),
    packed_groups=None,
    attention_normalizer="softmax",
    attention_temperature=1.0,
    attention_options=None,
    name="han",
):
    """Build a Hierarchical Attention Network over `[batch, S, W]` ids.

    Words: the ids are folded to `[batch * S, W]` (one row per sentence, all
    sentences of the batch at once), embedded (`mask_zero=True`), encoded
    by a `Bidirectional` GRU (or LSTM) and pooled by a `ContextAttention`
    named `"word_attention"` (with `word_pooling`, also max and mean over
    time) into sentence vectors. Sentences: the vectors are unfolded to
    `[batch, S, 2 * word_units * len(word_pooling)]`, encoded by a second
    bidirectional RNN and pooled by a `ContextAttention` named
    `"sentence_attention"` into a document vector → `Dropout`: the
    document vector. `hatt.models.build("han", ...)` adds the classification
    head (`hatt.models.head.classifier`).

    Masking: words are masked by id != 0, sentences by "holds at least one
    word". Masks are computed from the ids and passed explicitly, since
    reshapes drop Keras masks. Padded words and padded (or empty) sentences
    get exactly zero attention weight, so the result does not change when
    a review gets extra padded words or sentences; an empty review gives a
    finite probability. Both RNNs run under a right-padded mask that always
    keeps step 0 (see `hatt.models.wiring.EncoderMask`), which cuDNN
    accepts for empty sentences and reviews.

    Inference over dense ids skips the padding (on IMDB 85 % of the
    `[batch * S, W]` cells): the word encoder is a
    `hatt.models.wiring.LengthGroupedBidirectional` (rows in groups of
    similar length, each run to its longest row) and the word attention
    scores only the words (`ContextAttention(skip_masked=True)`). The
    outputs are those of the plain layers; training runs the plain ones.

    Args:
        vocabulary_size: Positive int, number of ids (padding and OOV
            included).
        embedding_dim: Positive int. Defaults to `100`.
        word_units: Positive int, units of each direction of the word RNN.
            Defaults to `50`.
        sentence_units: Positive int, units of each direction of the
            sentence RNN. Defaults to `50`.
        cell: `"gru"` (Yang et al.), `"lstm"` or `"sru"` (`hatt.layers.SRU`,
            Lei et al. 2017). Defaults to `"gru"`.
        attention_units: Positive int or `None`, `units` of both
            attentions. Defaults to `None` (the RNN output size).
        attention_score: Both attentions' `score`. Defaults to `"dot"`.
        attention_normalizer: Both attentions' `normalizer`: `"softmax"`,
            `"sparsemax"` or `"entmax15"` (exact zeros for low-scoring words
            and sentences). Defaults to `"softmax"`.
        attention_temperature: Positive float: the attention scores are
            divided by it before the normalizer (`ContextAttention`'s
            `temperature`); below 1 a sparse normalizer keeps fewer words.
            Defaults to `1.0`.
        attention_options: `None` or a dict of `ContextAttention`'s local
            and hard options: `{"local_p": True, "window": D}` (Luong et
            al.'s local-p) or `{"hard": "gumbel", "hard_k": k}` (Xu et al.'s
            hard attention; needs the softmax normalizer). Defaults to `None`.
        dropout: Float in `[0, 1)`, dropout on the word embeddings, the
            sentence vectors and the document vector. Defaults to `0.3`.
        word_pooling: Distinct names from `"attention"`, `"max"`, `"mean"`,
            `"attention"` among them: a sentence's vector concatenates these
            poolings of its word states, in this order (concat pooling, as
            in `build_rnn`; the word attention is still the one inspected).
            Defaults to `("attention",)`.
        packed_groups: `None` for dense `[batch, S, W]` input, or a
            positive int `K` for the packed layout of
            `hatt.data.pack_sentences` with `K` sentence groups
            (`len(sentence_groups)`): a dict input `{"sentence_index":
            [batch, S], "words_0": [N_0, W_0], ..., "words_{K-1}"}`. The
            same layers (one word encoder, called once per group) run over
            far less padding; the weights are those of the dense model, so
            `set_weights` moves them between the two. Defaults to `None`.
        name: The model's name. Defaults to `"han"`.

    Returns:
        The backbone (`hatt.models.build` adds the head): a functional
        `keras.Model` from int ids `[batch, S, W]` (0 = padding; or the packed
        dict) to the document vector `[batch, 2 * sentence_units]`.

    Example:

    >>> backbone = hatt.models.build_han(vocabulary_size=20000)
    >>> backbone.output.shape  # the document vector: (None, 100)
    >>> model = hatt.models.build("han", vocabulary_size=20000)  # with the head

    References:
        - [Yang et al., 2016. Hierarchical Attention Networks for Document
          Classification](https://aclanthology.org/N16-1174/)
    """
    arguments = dict(locals())  # by name: checked, and read by the word level and attentions
    _checks.check_arguments(arguments, cell=CELLS)

    # === Layers ===
    sentence_mask_layer = PaddingMask(reduce_last=True, name="sentence_mask")
    fold = FoldSentences(name="fold_sentences")  # dense input only
    encode_words = _word_encoder(arguments, dense=packed_groups is None)
    unfold = UnfoldSentences(name="unfold_sentences")
    sentence_dropout = keras.layers.Dropout(dropout, name="sentence_dropout")
    sentence_encoder_mask = EncoderMask(name="sentence_encoder_mask")
    sentence_encoder = recurrent_layer(cell, sentence_units, "sentence_encoder")
    sentence_attention = pooling_attention("sentence_attention", arguments)
    dropout_layer = keras.layers.Dropout(dropout, name="dropout")

    # === Functional Model ===
    if packed_groups is None:
        inputs, sentence_mask, sentences = _dense_sentences(
            encode_words, sentence_mask_layer, fold, unfold
        )
    else:
        inputs, sentence_mask, sentences = _packed_sentences(encode_words, packed_groups)
    sentences = sentence_dropout(sentences)
    x = sentence_encoder(sentences, mask=sentence_encoder_mask(sentence_mask))
    document, _ = sentence_attention(x, mask=sentence_mask, return_attention_scores=True)
    return keras.Model(inputs, dropout_layer(document), name=name)


def _word_encoder(arguments, dense):
    """The word level's layers, as ``encode_words``: ``[N, W]`` ids → sentence vectors
    ``[N, 2 * word_units * len(word_pooling)]``, set by ``build_han``'s ``arguments``.

    Dense input: most ``[batch * S, W]`` cells are padding, so at inference the word
    encoder runs its rows in groups of similar length and the word attention scores the
    words only (the packed layout has far less padding already).
    """
    word_mask_layer = PaddingMask(name="word_mask")
    word_encoder_mask = EncoderMask(name="word_encoder_mask")
    vocabulary_size, embedding_dim = arguments["vocabulary_size"], arguments["embedding_dim"]
    embedding = keras.layers.Embedding(
        vocabulary_size, embedding_dim, mask_zero=True, name="word_embedding"
    )
    embedding_dropout = keras.layers.Dropout(arguments["dropout"], name="embedding_dropout")
    word_encoder = recurrent_layer(
        arguments["cell"], arguments["word_units"], "word_encoder", grouped=dense
    )
    word_attention = pooling_attention("word_attention", arguments, skip_masked=dense)
    pool_words = ConcatPooling(arguments["word_pooling"], word_attention, prefix="word_")

    def encode_words(words):
        word_mask = word_mask_layer(words)
        x = embedding_dropout(embedding(words))
        x = word_encoder(x, mask=word_encoder_mask(word_mask))
        return pool_words(x, word_mask)

    return encode_words


def _dense_sentences(encode_words, sentence_mask_layer, fold, unfold):
    """Dense ids ``[batch, S, W]``: the input, the sentence mask ``[batch, S]`` and the
    sentence vectors ``[batch, S, d]`` (every sentence of the batch encoded at once)."""
    inputs = keras.Input(shape=(None, None), dtype="int32", name="token_ids")
    sentence_mask = sentence_mask_layer(inputs)
    sentences = unfold([encode_words(fold(inputs)), inputs])
    return inputs, sentence_mask, sentences


def _packed_sentences(encode_words, packed_groups):
    """The packed layout (``hatt.data.pack_sentences``): the input dict, the sentence mask
    and the sentence vectors, each group's rows encoded by the same word encoder and
    gathered back into their review's slots."""
    index = keras.Input(shape=(None,), dtype="int32", name="sentence_index")
    groups = [
        keras.Input(shape=(None,), dtype="int32", name=f"words_{k}") for k in range(packed_groups)
    ]
    inputs = {"sentence_index": index, **{f"words_{k}": g for k, g in enumerate(groups)}}
    # A slot holds a sentence when its row has a word (an empty sentence's row has none).
    present = PaddingMask(reduce_last=True, name="row_has_word")
    sentence_mask = GatherSentences(name="sentence_mask")([index, *map(present, groups)])
    gather = GatherSentences(name="gather_sentences")
    sentences = gather([index, *[encode_words(g) for g in groups]])
    return inputs, sentence_mask, sentences


# === Family spec ===
SPEC = FamilySpec(
    "han",
    build_han,
    NESTED,
    preset="han",
    word_encoder="word_encoder",
    sentence_encoder="sentence_encoder",
    sentence_attention=True,
    imdb_minutes=9.8,
    imdb_unlabeled_minutes=81.8,  # `--init imdb`'s build beside two other jobs, 2026-11-30
)
