"""Build a model family by name; read a built (or reloaded) model: its family, attention, views.

`family_spec(name)` gives a family's `FamilySpec` (declared at the end of its
module): what the other folders ask about a family. `build` composes a family's
backbone with THE head (`hatt.models.head`). The introspection that export and
inspect need lives here, once: `family_of`,
`is_packed`, `score_kind`, `dense_twin` (the dense `[batch, S, W]` twin of a
packed HAN) and `explanation_view` (the Keras views, sharing the model's
weights, that explanations are computed from).
"""

import dataclasses
import inspect

import keras

from hatt import names
from hatt.layers import ContextAttention
from hatt.models import _checks, cnn, han, rnn, transformer
from hatt.models import head as head_lib
from hatt.models.rnn import cell_of
from hatt.models.wiring import GatherSentences, UnfoldSentences

# Every family's spec (declared at the end of its module), in hatt.names.FAMILIES' order.
SPECS = {spec.name: spec for spec in (cnn.SPEC, rnn.SPEC, transformer.SPEC, han.SPEC)}
FAMILIES = names.FAMILIES
assert tuple(SPECS) == FAMILIES, "hatt.names.FAMILIES lists the families' specs in order"
BUILDERS = {name: spec.builder for name, spec in SPECS.items()}
DEFAULT_FAMILY = "cnn"  # the family of TextClassifier(), HattClassifier() and TrainConfig()


def family_spec(name):
    """The `FamilySpec` of family `name`: what the other folders ask instead of its name.

    Args:
        name: One of `hatt.models.FAMILIES`.

    Returns:
        A `hatt.models.spec.FamilySpec`.

    Raises:
        ValueError: `name` is no family.

    Example:

    >>> hatt.models.family_spec("han").layout
    'nested'
    """
    if not isinstance(name, str) or name not in SPECS:
        raise ValueError(f"Expected name to be one of {FAMILIES}. Received: name={name!r}")
    return SPECS[name]


def build(name, /, num_classes=2, ngram=None, **kwargs):
    """Build the classifier of family `name`: its backbone, then the head.

    Args:
        name: One of `"cnn"`, `"rnn"`, `"transformer"`, `"han"`.
        num_classes: Int >= 2. Two classes give a sigmoid over one logit
            (probability of class 1, `[batch, 1]`); more give a softmax
            (`[batch, num_classes]`). Defaults to `2`.
        ngram: `None`, or the n-gram channel's settings (a dict or a
            `hatt.models.head.NgramChannel`: `buckets`, `order`,
            `reduction`, `binary`, `feature_dropout`, `l2`), added next to
            the head on any family. Defaults to `None`.
        **kwargs: Keyword arguments of `hatt.models.build_<name>`, e.g.
            `vocabulary_size`.

    Returns:
        A functional `keras.Model`: int ids (`[batch, T]`, or `[batch, S, W]`
        / the packed dict for `"han"`) → class probabilities.

    Example:

    >>> model = hatt.models.build("han", vocabulary_size=20000, word_units=50)
    >>> wide = hatt.models.build("cnn", vocabulary_size=20000, ngram={"buckets": 2**22, "order": 3})
    """
    backbone = family_spec(name).builder(**kwargs)
    return head_lib.classifier(backbone, num_classes=num_classes, ngram=ngram)


def builder_arguments(name):
    """The keyword arguments `build_<name>` accepts (for checking a configuration early)."""
    return tuple(inspect.signature(family_spec(name).builder).parameters)


def _scores(model, layer_name, calls=1):
    """Attention weights of the first `calls` calls of the layer `layer_name`, or None.

    The builders call each attention layer once, except the packed HAN's
    word attention, which runs once per sentence group; Keras keeps a layer's
    calls (nodes) in order, also when it rebuilds a model from `.keras`.
    """
    try:
        layer = model.get_layer(layer_name)
    except ValueError:
        return None
    found = []
    for node in layer._inbound_nodes[:calls]:
        outputs = node.output_tensors
        if len(outputs) != 2:
            raise ValueError(
                f"Expected the layer {layer_name!r} of model {model.name!r} to be called with "
                "return_attention_scores=True, as the hatt.models builders do. "
                f"Received: a layer call with {len(outputs)} output(s)"
            )
        found.append(outputs[1])
    return found


def attention_model(model):
    """A model sharing `model`'s weights that also returns its attention.

    Works on a model built by `hatt.models.build` and on one reloaded from
    `.keras`: the builders call their attention layers with
    `return_attention_scores=True`, so the weights are tensors of the
    model's graph, found by layer name. No weights are copied.

    Args:
        model: A model from `hatt.models.build` (trained or not, or
            reloaded with `keras.saving.load_model`).

    Returns:
        A functional `keras.Model` from the same ids to a dict:

        - `"probability"`: `[batch, 1]`, the model's output.
        - `"word_attention"`: `[batch, T]` for flat models, `[batch, S, W]`
          for the HAN (packed HAN: `W` is the widest group's, as in
          `hatt.data.unpack_sentences`). Zero on padding; sums to 1 over the words of each
          review (HAN: of each non-empty sentence); all zeros for an empty
          review or sentence. For the CNN with max pooling it is the share
          of feature channels whose maximum lies at each word.
        - `"sentence_attention"` (HAN only): `[batch, S]`, zero on empty
          sentences, sums to 1 over the others.

    Example:

    >>> model = keras.saving.load_model("han.keras")
    >>> views = hatt.models.attention_model(model)(ids)
    >>> views["word_attention"].shape  # [batch, S, W]
    """
    inputs = model.input
    outputs = {"probability": model.outputs[0]}
    packed = isinstance(inputs, dict) and "sentence_index" in inputs
    groups = sum(k.startswith("words_") for k in inputs) if packed else 1
    word = _scores(model, "word_attention", calls=groups)
    if word is not None:
        if packed:
            word = GatherSentences(name="gather_word_attention")([inputs["sentence_index"], *word])
        elif len(model.inputs[0].shape) == 3:
            word = UnfoldSentences(name="unfold_word_attention")([word[0], model.inputs[0]])
        else:
            word = word[0]
        outputs["word_attention"] = word
    sentence = _scores(model, "sentence_attention")
    if sentence is not None:
        outputs["sentence_attention"] = sentence[0]
    return keras.Model(inputs, outputs, name=f"{model.name}_attention")


# === Introspection: what export and inspect read off a model ===========================


def is_packed(model):
    """Whether `model` is a packed HAN (dict input with `"sentence_index"`)."""
    inputs = model.input
    return isinstance(inputs, dict) and "sentence_index" in inputs


def family_of(model):
    """The family of a model built by `build` (its name, else its layers).

    Example:

    >>> hatt.models.family_of(hatt.models.build("rnn", vocabulary_size=100))
    'rnn'
    """
    if model.name in FAMILIES:
        return model.name
    names = {layer.name for layer in model.layers}
    if "sentence_attention" in names:
        return "han"
    if any(name.startswith("transformer_block") for name in names):
        return "transformer"
    if any(name.startswith("conv_") for name in names):
        return "cnn"
    return "rnn"


SCORE_KINDS = ("attention", "saliency")


def score_kind(model):
    """`"attention"` when the words are pooled by a `ContextAttention`, else `"saliency"`.

    The CNN's max-over-time pooling (its default) has no attention; its word
    view is gradient × input saliency.
    """
    pooling = head_lib.layer_or_none(model, "word_attention")
    return "attention" if isinstance(pooling, ContextAttention) else "saliency"


def dense_twin(model):
    """The dense `[batch, S, W]` twin of a packed HAN (same weights); other models as is.

    The packed HAN (`packed_groups=K`) and the dense one have the same
    weight-bearing layers under the same names, so the twin is built with the
    packed model's settings (read from its layers, head and n-gram channel
    included) and the weights are copied layer by layer.

    Args:
        model: A model from `build` (trained or reloaded).

    Returns:
        A model over dense ids: `model` itself unless it is a packed HAN.
    """
    if not is_packed(model):
        return model
    embedding = model.get_layer("word_embedding")
    word_encoder = model.get_layer("word_encoder")
    sentence_encoder = model.get_layer("sentence_encoder")
    word_attention = model.get_layer("word_attention")
    twin = build(
        "han",
        num_classes=head_lib.num_classes_of(model),
        ngram=head_lib.ngram_channel_of(model),
        vocabulary_size=embedding.input_dim,
        embedding_dim=embedding.output_dim,
        word_units=word_encoder.forward_layer.units,
        sentence_units=sentence_encoder.forward_layer.units,
        cell=cell_of(word_encoder),
        attention_units=word_attention.units,
        attention_score=word_attention.score,
        attention_normalizer=word_attention.normalizer,
        attention_temperature=word_attention.temperature,
        attention_options={k: getattr(word_attention, k) for k in _checks.ATTENTION_OPTIONS},
        dropout=model.get_layer("dropout").rate,
        name=model.name,
    )
    for layer in twin.layers:
        if layer.weights:
            layer.set_weights(model.get_layer(layer.name).get_weights())
    return twin


@dataclasses.dataclass
class ExplanationView:
    """Keras models sharing a classifier's weights, from which explanations are computed.

    Attributes:
        attention: ids → `{"probability", "logits", "word_attention"[,
            "sentence_attention"]}` (`attention_model` plus the logits
            `[batch, units]` the probabilities come from).
        embed: ids → the word embedding's output (`[batch, T, e]`; the
            HAN's is folded, `[batch * S, W, e]`).
        logits: `[ids, embedded]` → the logits: the rest of the model from
            the embedding output on (the ids still give the masks and feed
            the n-gram channel), for gradients with respect to the
            embeddings.
        deep: `[ids, embedded]` → the deep part's logits alone (the Dense
            `"logit"` layer's output, its bias included): the only part that
            depends on the embeddings, so integrated gradients run it alone.
        parts: `[ids, embedded]` → everything one forward pass gives:
            `attention_model`'s outputs, `"deep_logits"` (as `deep`) and,
            with the channel, `"ngram_logits"` (its output `[batch, units]`);
            the logits are `deep_logits + ngram_logits` (the `Add` named
            `"total_logit"`), or `deep_logits` without the channel.
        logit_bias: The Dense `"logit"` layer's bias `[units]` (a
            variable), or `None` when it has none.
        channel: The `hatt.layers.NgramLogit` named `"ngram_logit"`, or
            `None`.
        family, score_kind: as `family_of` and `score_kind` say.
    """

    attention: keras.Model
    embed: keras.Model
    logits: keras.Model
    deep: keras.Model
    parts: keras.Model
    logit_bias: object
    channel: object
    family: str
    score_kind: str


def explanation_view(model):
    """The `ExplanationView` of a (dense) classifier built by `build`.

    Args:
        model: A model from `build`, or reloaded; a packed HAN is viewed
            through its `dense_twin` first by the callers that need dense
            ids.

    Returns:
        An `ExplanationView`.
    """
    # A model whose inputs include an inner tensor (the logits view, from the embedding
    # output on) makes Keras clone the graph's nodes (clone_graph_nodes), which re-points
    # the classifier's own Input tensors at the clones: it could then neither be saved
    # nor viewed a second time. Their history is put back once the views exist.
    inputs = keras.tree.flatten(model.inputs)
    history = [tensor._keras_history for tensor in inputs]
    try:
        return _explanation_view(model)
    finally:
        for tensor, origin in zip(inputs, history, strict=True):
            tensor._keras_history = origin


def _explanation_view(model):
    logits = head_lib.logits_tensor(model)
    attention = attention_model(model)
    views = keras.Model(
        attention.input, {**attention.output, "logits": logits}, name=f"{model.name}_views"
    )
    embedding = head_lib.layer_or_none(model, "embedding") or model.get_layer("word_embedding")
    from_embedded = [model.input, embedding.output]
    logit_layer = model.get_layer("logit")
    channel = head_lib.layer_or_none(model, "ngram_logit")
    # Not the logits themselves: without the channel they are the deep logits, and a
    # tensor given twice as an output of a model from an inner tensor loses one copy.
    parts = {**attention.output, "deep_logits": logit_layer.output}
    if channel is not None:
        parts["ngram_logits"] = channel.output
    return ExplanationView(
        attention=views,
        embed=keras.Model(model.input, embedding.output, name=f"{model.name}_embed"),
        logits=keras.Model(from_embedded, logits, name=f"{model.name}_logits"),
        deep=keras.Model(from_embedded, logit_layer.output, name=f"{model.name}_deep"),
        parts=keras.Model(from_embedded, parts, name=f"{model.name}_parts"),
        logit_bias=logit_layer.bias if logit_layer.use_bias else None,
        channel=channel,
        family=family_of(model),
        score_kind=score_kind(model),
    )
