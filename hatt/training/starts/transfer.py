"""Start a model from a trained hatt model (``--init MODEL``): transfer to a small corpus.

A model trained on a large corpus (the IMDB HAN) knows how to read reviews; a
few hundred documents of a related task (their star ratings, another site's
reviews) are too few to learn that from scratch. ``TrainConfig.init`` names the
trained model (a run directory, a ``.keras`` file or ``saved_models/NAME``); after
the new model is built (and its embedding started from word vectors, if asked),
every layer of it with weights takes the same-named layer's weights from the
trained model when the family is the same and every weight's shape matches:

- the word embedding (the one-hot CNN: its region table) row by row through the
  two vocabularies: a word both know gets the trained row, the others keep their
  start (word2vec or random). The run's vocabulary is the trained model's words
  first, then the new corpus's words it lacks (:func:`joint_vocabulary`), so the
  new model reads every word the trained one did, not only those of its few
  documents (with ``prepared`` shards, whose ids are fixed, the shards' own);
- the deep logit layer (``"logit"``) only when the class names are the same, in
  the same order; otherwise the new task's head starts fresh;
- never the n-gram channel (``"ngram_logit"``): it is fit on the new corpus.

What was copied, mapped and left is written to ``init.json`` in the run
directory. A resumed run restores its own weights instead.

Gradual unfreezing (``init_frozen_epochs=N``, ULMFiT's idea in one step): for
the first ``N`` epochs the copied layers below the head (and those pretrained as a
language model, :mod:`hatt.training.starts.language_model`) are frozen and only the
rest trains (the head, copied or fresh: what ULMFiT unfreezes first; the n-gram
channel; any layer the trained model did not have); from epoch ``N + 1`` every
layer trains. :func:`fine_tuning` gives the
callback (:class:`GradualUnfreezing`) and adds ``frozen_epochs`` and
``frozen_layers`` to ``init.json``.

Discriminative rates (``discriminative_decay=d``, ULMFiT's 2.6): the started
layer nearest the head trains at the run's rate divided by ``d``, each one
below it ``d`` times slower again (:func:`discriminative_rates`; the
optimizer's ``layer_rates``, :class:`hatt.training.run.optimizers.LayerRates`);
``init.json`` / ``language_model.json`` say each layer's factor
(``"layer_rates"``). :func:`fine_tuning` sets up both.

    >>> info = init_from_model(model, vectorizer, class_names, "runs/han-imdb")
    >>> info["copied"]  # ["word_encoder", "word_attention", ...]
"""

import json
from pathlib import Path

import keras
import numpy as np

from hatt import run_dir as run_files
from hatt.data.readers.files import read_json_object
from hatt.training.starts import imdb as imdb_start

NEVER = ("ngram_logit",)  # fit on the new corpus
BY_WORD = ("embedding", "word_embedding", "regions")  # rows indexed by word id
HEAD = "logit"


def load_source(path, family):
    """The trained model at ``path`` (a Keras-backed :class:`hatt.export.Predictor`).

    Args:
        path: a run directory, a ``.keras`` file or ``saved_models/NAME``; or ``"imdb"``,
            hatt's IMDB start of ``family`` (:mod:`hatt.training.starts.imdb`, built).
        family: the family it must be.

    Raises:
        ValueError: nothing loadable there, a SavedModel without its ``.keras``
            file, or a model of another family.
    """
    from hatt import export

    if imdb_start.is_imdb_start(path):
        path = imdb_start.built_start(family)
        print(imdb_start.describe(path), flush=True)
    try:
        predictor = export.load_trained(path)
    except export.ExportError as error:
        raise ValueError(f"Expected init to name a trained hatt model. Received: {error}") from None
    if predictor.family != family:
        raise ValueError(
            f"Expected init to be a {family} model like the one trained. Received: init="
            f"{str(path)!r}, a {predictor.family} model"
        )
    return predictor


def source_words(source):
    """The words of the trained model ``source`` (no padding or OOV), or ``None``."""
    if source is None:
        return None
    return source.text_model.vectorizer.get_vocabulary(include_special_tokens=False)


def joint_vocabulary(source_words, words):
    """The run's vocabulary with ``--init``: the trained model's words, in its order, then
    the corpus's ``words`` it lacks, in theirs.

    A new corpus of a few hundred documents knows a few thousand words; with its own
    vocabulary alone, every other word the trained model reads well is out of
    vocabulary in the documents it is asked about later.
    """
    known = set(source_words)
    return [*source_words, *(word for word in words if word not in known)]


def _row_mapped(target, source, vocabulary, source_vocabulary):
    """The target layer's weights with the rows of words the source also knows replaced
    (every weight whose rows are word ids); the other weights as the source's; how many."""
    index = {word: i for i, word in enumerate(source_vocabulary)}
    pairs = [
        (i, index[word])
        for i, word in enumerate(vocabulary)
        if i >= 2 and index.get(word, 0) >= 2  # never padding (0) or OOV (1)
    ]
    here, there = zip(*pairs, strict=True) if pairs else ((), ())
    weights = []
    for mine, theirs in zip(target.get_weights(), source.get_weights(), strict=True):
        by_word = mine.shape[0] == len(vocabulary) and theirs.shape[0] == len(source_vocabulary)
        if by_word and mine.shape[1:] == theirs.shape[1:]:  # same width a word
            mine = np.array(mine)
            mine[list(here)] = theirs[list(there)]
            weights.append(mine)
        elif mine.shape == theirs.shape:
            weights.append(theirs)
        else:
            return None, 0
    return weights, len(pairs)


def _shapes(layer):
    return [tuple(w.shape) for w in layer.weights]


def init_from_model(model, vectorizer, class_names, source):
    """Copy the weights of ``source`` (:func:`load_source`) into ``model``.

    Args:
        model: the new model, built and not trained.
        vectorizer: the new run's adapted vectorizer.
        class_names: the new run's class names.
        source: a Keras-backed Predictor of the trained model.

    Returns:
        ``{"source", "copied": [layer names], "embedding_words": mapped rows,
        "vocabulary_size", "head": "copied" | reason, "left": {layer: reason}}``.

    Raises:
        ValueError: no layer could be copied (the models differ in every layer).
    """
    trained = source.text_model.classifier
    by_name = {layer.name: layer for layer in trained.layers if layer.weights}
    vocabulary = vectorizer.get_vocabulary()
    source_vocabulary = source.text_model.vectorizer.get_vocabulary()
    same_classes = tuple(class_names) == tuple(source.class_names)
    info = {"source": str(source.source), "copied": [], "left": {}, "embedding_words": 0}
    for layer in model.layers:
        if not layer.weights or layer.name in NEVER:
            continue
        other = by_name.get(layer.name)
        if other is None:
            info["left"][layer.name] = "the trained model has no such layer"
        elif layer.name in BY_WORD:
            weights, mapped = _row_mapped(layer, other, vocabulary, source_vocabulary)
            if weights is None:
                info["left"][layer.name] = f"other shapes ({_shapes(other)} there)"
                continue
            layer.set_weights(weights)
            info["embedding_words"] = mapped
            info["copied"].append(layer.name)
        elif layer.name == HEAD and not same_classes:
            info["left"][layer.name] = (
                f"other classes ({list(source.class_names)} there): the head starts fresh"
            )
        elif _shapes(layer) != _shapes(other):
            info["left"][layer.name] = (
                f"other shapes ({_shapes(other)} there, {_shapes(layer)} here)"
            )
        else:
            layer.set_weights(other.get_weights())
            info["copied"].append(layer.name)
    info["vocabulary_size"] = int(vectorizer.vocabulary_size)
    info["head"] = "copied" if HEAD in info["copied"] else info["left"].get(HEAD, "none")
    if not info["copied"]:
        raise ValueError(
            f"Expected init={info['source']!r} to share layers with the new model. Received: "
            f"none could be copied ({info['left']})"
        )
    return info


def summary(info):
    """One line for the user: what the new model took from the trained one."""
    return (
        f"Started from {info['source']}: {len(info['copied'])} layers copied "
        f"({', '.join(info['copied'])}), {info['embedding_words']} of "
        f"{info['vocabulary_size']} words' vectors; head: {info['head']}"
    )


# === Gradual unfreezing ===============================================================


class GradualUnfreezing(keras.callbacks.Callback):
    """Freeze ``variables`` for the epochs before ``frozen_epochs``, then train them.

    Whether an epoch is frozen follows from its number alone (in
    ``on_epoch_begin``), so a run resumed inside the frozen epochs freezes and one
    resumed after them trains every layer, as the uninterrupted run did. Each
    change of state retraces the train step (Keras 3 reads ``trainable`` when it
    traces it). The optimizer must have been built on every variable
    (:func:`fine_tuning` does), so its state carries across the change.

    Early stopping cannot end the frozen epochs: its patience counts from the
    first epoch that trains every layer; its best epoch is still chosen among all.

    Args:
        variables: the variables to freeze (those of the copied layers that train).
        frozen_epochs: how many epochs they stay frozen.
        early_stopping: the run's ``keras.callbacks.EarlyStopping``, or ``None``.
    """

    def __init__(self, variables, frozen_epochs, early_stopping=None):
        super().__init__()
        self.variables = list(variables)
        self.frozen_epochs = int(frozen_epochs)
        self.early_stopping = early_stopping
        self.patience = None if early_stopping is None else early_stopping.patience
        self.frozen = False

    def _set_frozen(self, frozen):
        if frozen != self.frozen:
            for variable in self.variables:
                variable.trainable = not frozen
            self.frozen = frozen
            if self.model is not None:
                self.model.make_train_function(force=True)

    def on_epoch_begin(self, epoch, logs=None):
        frozen = epoch < self.frozen_epochs
        if self.early_stopping is not None:
            self.early_stopping.patience = 2**31 if frozen else self.patience
            if epoch == self.frozen_epochs:
                self.early_stopping.wait = 0  # patience starts with the whole model
        self._set_frozen(frozen)

    def on_train_end(self, logs=None):
        self._set_frozen(False)  # the saved model trains every layer again
        if self.early_stopping is not None:
            self.early_stopping.patience = self.patience


def started_layers(model, run_dir):
    """The layers below the head started elsewhere, by file: ``{file name: [layer names]}``.

    Those copied from ``init`` (``init.json``'s ``"copied"``) and those pretrained as a
    language model (``language_model.json``'s ``"layers"``), as the run's first
    session wrote them (a resumed run reads the same); never the head or the n-gram
    channel, and a layer once only (under the first file that names it).
    """
    started, seen = {}, set()
    for file, key in ((run_files.INIT, "copied"), (run_files.LANGUAGE_MODEL, "layers")):
        path = Path(run_dir) / file
        if path.is_file():
            names = read_json_object(path)[key]
            started[file] = [n for n in names if n not in (*NEVER, HEAD) and n not in seen]
            seen.update(started[file])
    return started


def _depths(model):
    """Each layer's depth from the output (the head's is the smallest), by name."""
    depths = {}
    for depth, nodes in getattr(model, "_nodes_by_depth", {}).items():
        for node in nodes:
            name = node.operation.name
            depths[name] = max(depth, depths.get(name, depth))
    if not depths:  # not a functional model: the layers' order, last the shallowest
        depths = {layer.name: len(model.layers) - i for i, layer in enumerate(model.layers)}
    return depths


def discriminative_rates(model, names, decay):
    """ULMFiT's discriminative rates: ``{layer: factor}`` for the started layers ``names``.

    The started layer nearest the head trains at the run's rate divided by ``decay``,
    each one below it at the rate of the one above divided by ``decay`` again (layers
    side by side, the CNN's convolutions, share a rate); layers trained from their
    start (the head, the n-gram channel, the fresh ones) keep the run's rate.

    >>> discriminative_rates(han, ["word_embedding", "word_encoder"], 2.6)
    {'word_encoder': 0.3846..., 'word_embedding': 0.1479...}
    """
    if decay == 1:
        return {}
    depths = _depths(model)
    names = [n for n in names if model.get_layer(n).trainable_weights]
    levels = sorted({depths[n] for n in names})
    return {
        n: float(decay) ** -(levels.index(depths[n]) + 1)
        for n in sorted(names, key=lambda n: depths[n])
    }


def _set_layer_rates(model, rates):
    """Give ``model``'s optimizer ``rates`` and check that each rated layer's variables
    find their factor (a path that does not name its layer would train at full rate)."""
    # LayerRates' face (hatt.training.run.optimizers): a start sits below the run's optimizers
    if not hasattr(model.optimizer, "rate_of_path"):
        raise ValueError(
            "Expected an optimizer with layer rates (hatt.training.run.optimizers.LayerRates) "
            f"for discriminative rates. Received: {type(model.optimizer).__name__}"
        )
    model.optimizer.layer_rates = rates
    for name, factor in rates.items():
        for variable in model.get_layer(name).trainable_weights:
            if model.optimizer.rate_of_path(variable.path) != factor:
                raise RuntimeError(
                    f"Layer {name!r}'s variable {variable.path!r} does not get its rate "
                    f"{factor}: its path does not name the layer"
                )


def fine_tuning(model, config, run_dir, early_stopping=None):
    """How the layers started elsewhere train: frozen first, then slower the lower they are.

    Call it inside the run's strategy scope, before ``fit`` and after the
    backup is restored. The layers are :func:`started_layers`.

    - ``config.init_frozen_epochs = N``: they stay frozen for the first ``N`` epochs
      (:class:`GradualUnfreezing`), the head training throughout (a copied head frozen
      too would leave a same-task model nothing to train); the n-gram channel is never
      among them, and a layer another setting froze (``word_vectors_trainable=false``)
      stays frozen. The optimizer is built on every trainable variable (frozen ones
      included, so their moments exist once they train).
    - ``config.discriminative_decay = d > 1``: the optimizer's ``layer_rates``
      (:func:`discriminative_rates`), set again each session from the files.

    Returns:
        ``[GradualUnfreezing(...)]`` or ``[]``; ``init.json`` (and
        ``language_model.json``) gains ``"frozen_epochs"`` (the first N epochs, 1-based
        1..N) and ``"frozen_layers"``, or ``"layer_rates"``, for its layers.
    """
    frozen, decay = config.init_frozen_epochs, config.discriminative_decay
    if not frozen and decay == 1:
        return []
    started = started_layers(model, run_dir)
    rates = discriminative_rates(model, [n for names in started.values() for n in names], decay)
    for file, names in started.items():
        path = Path(run_dir) / file
        info = read_json_object(path)
        if frozen:
            info["frozen_epochs"] = int(frozen)
            info["frozen_layers"] = [n for n in names if model.get_layer(n).trainable_weights]
        if rates:
            info["layer_rates"] = {n: rates[n] for n in names if n in rates}
        path.write_text(json.dumps(info, indent=2) + "\n")
    if rates:
        _set_layer_rates(model, rates)
    if not frozen:
        return []
    names = [n for names in started.values() for n in names]
    variables = [v for name in names for v in model.get_layer(name).trainable_weights]
    if model.optimizer is not None and not model.optimizer.built:
        model.optimizer.build(model.trainable_variables)
    return [GradualUnfreezing(variables, frozen, early_stopping)]
