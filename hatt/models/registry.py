"""Build a model family by name; view a trained model's attention."""

import keras

from hatt.models._layers import GatherSentences, UnfoldSentences
from hatt.models.cnn import build_cnn
from hatt.models.han import build_han
from hatt.models.rnn import build_rnn
from hatt.models.transformer import build_transformer

BUILDERS = {
    "cnn": build_cnn,
    "rnn": build_rnn,
    "transformer": build_transformer,
    "han": build_han,
}
FAMILIES = tuple(BUILDERS)


def build(name, **kwargs):
    """Build the model family `name` with the builder's keyword arguments.

    Args:
        name: One of `"cnn"`, `"rnn"`, `"transformer"`, `"han"`.
        **kwargs: Keyword arguments of `hatt.models.build_<name>`, e.g.
            `vocabulary_size`.

    Returns:
        The functional `keras.Model` the builder returns: int ids (`[batch,
        T]`, or `[batch, S, W]` for `"han"`) → probability `[batch, 1]`.

    Example:

    >>> model = hatt.models.build("han", vocabulary_size=20000, word_units=50)
    """
    if name not in BUILDERS:
        raise ValueError(f"Expected name to be one of {FAMILIES}. Received: name={name!r}")
    return BUILDERS[name](**kwargs)


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
