"""Adversarial (AT) and virtual adversarial (VAT) training on the word embeddings.

Miyato et al. (2017) perturb the word embeddings of each document in the
direction that raises the loss most, and train on the perturbed document too:

- ``adversarial="at"``: ``r = ε · g / ‖g‖`` with ``g = ∂loss/∂embedded`` (the
  norm taken per document over its words and dimensions, ``r`` held constant),
  and the step's loss becomes ``loss + weight · loss(embedded + r, y)``.
- ``adversarial="vat"``: no label needed. One power iteration finds the
  direction the prediction is most sensitive to: ``d`` random and of unit norm,
  ``g = ∂KL(p(x) ‖ p(x + ξ d))/∂d``, ``r = ε · g / ‖g‖``, and the loss becomes
  ``loss + weight · KL(p(x) ‖ p(x + r))`` with ``p(x)`` held constant.

``ε`` is ``adversarial_epsilon``, ``weight`` is ``adversarial_weight``.

Normalised embeddings. Miyato normalise the embedding table (each dimension
to mean 0 and variance 1 over the vocabulary) so that ``ε = 5`` means the same
for any model. hatt's models keep their plain ``Embedding`` (the saved model is
unchanged); the perturbation is measured in those normalised units instead:
with ``σ`` the per-dimension standard deviation of the embedding table's rows
(every word weighs the same; Miyato weigh them by frequency) taken at each
step, ``r = σ ⊙ ε u / ‖u‖`` with ``u = σ ⊙ g`` — exactly the perturbation of
norm ``ε`` that AT on ``(E − μ)/σ`` would add, mapped back to ``E``. VAT's
``ξ`` is 0.1 in the same units (Miyato's ``small_constant_for_finite_diff``).
Padding positions get no perturbation. The HAN's words are normalised per
document too (its sentences folded or packed back to their review).

What changes is the training step only: ``enable`` replaces the model's
``train_step`` (and wraps the embedding layer's ``call`` so that a step can
read and shift its output). Evaluation, prediction, ``model.save`` and the
export see the model as built; a reloaded ``model.keras`` trains as usual.
``class_weight`` and ``sample_weight`` weigh the adversarial loss as they
weigh the usual one (VAT's KL is not weighted: it needs no label).

Unlabeled documents. VAT needs no label, and Miyato et al. take its term on
unlabeled documents. With ``adversarial_unlabeled`` (the default) and a run's
``unlabeled=`` documents, each training batch comes with a batch of as many
unlabeled documents (:func:`with_unlabeled_stream`: an endless stream shuffled by the
run's seed, read from the run's first step, so a resumed run reads what an
uninterrupted one would), and the VAT term is ``KL(p(u) ‖ p(u + r))`` on those
instead of on the labeled batch: one forward pass more a step than VAT on the labeled
batch (``p(u)``). Without unlabeled documents, or with ``adversarial_unlabeled=False``,
the term is taken on the labeled batch.

    >>> model = hatt.models.build("rnn", vocabulary_size=100)
    >>> model.compile(optimizer="adam", loss="binary_crossentropy")
    >>> hatt.training.run.adversarial.enable(model, config)  # config.adversarial="at"

References:
    - [Miyato, Dai and Goodfellow, 2017. Adversarial Training Methods for
      Semi-Supervised Text Classification](https://arxiv.org/abs/1605.07725)
"""

import contextlib
import threading

import keras
import tensorflow as tf
from keras.src.losses.loss import unscale_loss_for_distribution  # as Keras' own train_step

from hatt.training.run.record import RunHook
from hatt.training.settings import semi
from hatt.training.starts import word_vectors  # THE finder of a model's word embedding

METHODS = ("at", "vat")
# the keys of a training batch's inputs that carry an unlabeled batch (with_unlabeled)
LABELED, UNLABELED = "labeled", "unlabeled"
XI = 0.1  # VAT's finite-difference step, in normalised units (Miyato's code: 0.1)
_TINY = 1e-12


def word_embedding(model, method="at"):
    """The word ``Embedding`` of ``model`` that the perturbation is added to.

    Raises:
        ValueError: the model has no word embedding (the one-hot CNN reads
            words through its region table).
    """
    try:
        return word_vectors.embedding_layer(model)
    except ValueError:
        pass
    raise ValueError(
        "Expected a model with a word embedding (layer 'embedding' or 'word_embedding') "
        f"for adversarial={method!r}: the perturbation is added to the word vectors. "
        f"Received: the model {model.name!r}, which has none (the one-hot CNN, words='one_hot', "
        "reads words through its region table); use words='embedding' or adversarial='none'."
    )


def enable(model, config):
    """Make ``model``'s training step add ``config.adversarial``'s loss (see the module).

    Args:
        model: a compiled model from ``hatt.models.build`` (TensorFlow backend).
        config: a :class:`hatt.training.TrainConfig` (``adversarial``,
            ``adversarial_epsilon``, ``adversarial_weight``).

    Returns:
        ``model`` itself, its ``train_step`` replaced (nothing else changes).

    Raises:
        ValueError: an unknown method, or a model without a word embedding.
    """
    method = config.adversarial
    if method not in METHODS:
        raise ValueError(
            f"Expected adversarial to be one of {', '.join(map(repr, METHODS))} to enable it. "
            f"Received: adversarial={method!r}"
        )
    hook = _EmbeddingHook(word_embedding(model, method))
    settings = (method, float(config.adversarial_epsilon), float(config.adversarial_weight))

    def train_step(data):
        return _train_step(model, hook, settings, data)

    model.train_step = train_step
    model.train_function = None  # a step traced before this one is traced again
    model.adversarial_hook = hook  # read by the tests (a plain object: never saved)
    return model


class AdversarialHook(RunHook):
    """``adversarial``: AT / VAT in a run (:class:`hatt.training.run.record.RunHook`).

    Checks that the model has a word embedding before any data, replaces the compiled
    model's training step (:func:`enable`), and gives VAT's term a batch of the run's
    unlabeled documents a step (:func:`with_unlabeled_stream`) when it reads them.
    """

    def check(self, config, model):
        if config.adversarial != "none":
            word_embedding(model, config.adversarial)

    def compiled(self, config, model):
        if config.adversarial != "none":  # AT / VAT change the training step only
            enable(model, config)

    def train_dataset(self, run, corpus, dataset, steps):
        if not semi.vat_on_unlabeled(run.config) or corpus.unlabeled is None:
            return dataset
        return with_unlabeled_stream(corpus, dataset, run.encoded_unlabeled(corpus), run, steps)


# === The training step ==================================================================


def with_unlabeled(train, unlabeled):
    """Each batch of ``train`` with a batch of ``unlabeled`` inputs for VAT's term.

    Args:
        train: the training dataset: ``(x, y)`` or ``(x, y, sample_weight)`` batches.
        unlabeled: a dataset of input batches (no labels), at least as many.

    Returns:
        A dataset of ``({"labeled": x, "unlabeled": u}, y[, sample_weight])``, as
        long as ``train``; the training step of :func:`enable` reads it.
    """

    def pair(batch, inputs):
        return ({LABELED: batch[0], UNLABELED: inputs}, *batch[1:])

    return tf.data.Dataset.zip((train, unlabeled)).map(pair)


def with_unlabeled_stream(corpus, train, ids, run, steps):
    """``train`` with a batch of the unlabeled documents ``ids`` a step (:func:`with_unlabeled`).

    Their endless stream (:meth:`hatt.training.run.datasets.Corpus.unlabeled_batches`) is read
    from the batch of the run's first step (``run.initial_epoch · steps``), so a resumed
    run reads what an uninterrupted one would. ``train`` as it is when the documents
    fill no batch (said).
    """
    stream = corpus.unlabeled_batches(ids, run.replicas)
    if stream is None:
        print("VAT: too few unlabeled documents for a batch; its term reads the labeled batches")
        return train
    print(f"VAT: its term on batches of the {int(ids.nrows()):,} unlabeled documents")
    return with_unlabeled(train, stream.skip(run.initial_epoch * steps))


def _split_inputs(x):
    """``(labeled inputs, unlabeled inputs or None)`` of a training batch's ``x``."""
    if isinstance(x, dict) and UNLABELED in x:
        return x[LABELED], x[UNLABELED]
    return x, None


def _train_step(model, hook, settings, data):
    """Keras' TensorFlow ``train_step`` with the adversarial term added to the loss."""
    method, epsilon, weight = settings
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    x, unlabeled = _split_inputs(x)
    with tf.GradientTape() as tape:
        with tf.GradientTape(watch_accessed_variables=False) as inner:
            with hook.recording(tape=inner) as clean:
                y_pred = model(x, training=True)
            loss = model._compute_loss(
                x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=True
            )
        if method == "at":
            with tape.stop_recording():
                gradients = inner.gradient(loss, clean.outputs)
                perturbation = at_perturbation(hook.layer, x, clean, gradients, epsilon)
            with hook.recording(perturbations=perturbation):
                y_adv = model(x, training=True)
            extra = model._compile_loss(y, y_adv, sample_weight)
        elif unlabeled is None:
            extra = vat_loss(model, hook, x, epsilon, tape, clean=clean, p=y_pred)
        else:
            extra = vat_loss(model, hook, unlabeled, epsilon, tape)
        loss = loss + weight * extra
        model._loss_tracker.update_state(
            unscale_loss_for_distribution(loss),
            sample_weight=tf.shape(next(i for i in tf.nest.flatten(x) if i is not None))[0],
        )
        if model.optimizer is not None:
            loss = model.optimizer.scale_loss(loss)
    weights = model.trainable_weights
    model.optimizer.apply_gradients(zip(tape.gradient(loss, weights), weights, strict=True))
    return model.compute_metrics(x, y, y_pred, sample_weight=sample_weight)


def at_perturbation(layer, x, clean, gradients, epsilon):
    """AT's ``r`` for each call of the embedding: ``σ ⊙ ε · unit(σ ⊙ g)`` per document.

    Args:
        layer: the word ``Embedding`` (its table gives ``σ``).
        x: the batch's model input (it tells which rows belong to which document).
        clean: the clean pass's record (:class:`_Pass`: the ids and outputs).
        gradients: ``∂loss/∂output`` of each call.
        epsilon: the perturbation's norm in normalised units.

    Returns:
        A list of constant tensors, one per call, shaped as its output.
    """
    sigma = _sigma(layer)
    segments = _segments(x, clean.ids)
    masks = [_word_mask(ids) for ids in clean.ids]
    gradients = [
        tf.zeros_like(out, tf.float32) if g is None else tf.cast(g, tf.float32)
        for g, out in zip(gradients, clean.outputs, strict=True)
    ]
    units = _unit([g * sigma * m for g, m in zip(gradients, masks, strict=True)], segments)
    return [tf.stop_gradient(epsilon * u * sigma) for u in units]


def vat_loss(model, hook, x, epsilon, tape, clean=None, p=None):
    """VAT's term ``KL(p(x) ‖ p(x + r))`` on the inputs ``x``.

    Args:
        model, hook: the model and its embedding hook (:func:`enable`).
        x: the inputs the term is taken on (the labeled batch's, or an unlabeled batch).
        epsilon: the perturbation's norm in normalised units.
        tape: the step's gradient tape (stopped while ``r`` is found).
        clean, p: the clean pass's record and probabilities when the step already has
            them (the labeled batch); ``None``: a clean pass on ``x`` is run here.
    """
    with tape.stop_recording():
        if clean is None:
            with hook.recording() as clean:
                p = model(x, training=True)
        perturbation = vat_perturbation(model, hook, x, clean, p, epsilon)
    with hook.recording(perturbations=perturbation):
        q = model(x, training=True)
    return _kl(p, q)


def vat_perturbation(model, hook, x, clean, y_pred, epsilon):
    """VAT's ``r`` (one power iteration from a random direction), as :func:`at_perturbation`."""
    sigma = _sigma(hook.layer)
    segments = _segments(x, clean.ids)
    masks = [_word_mask(ids) for ids in clean.ids]
    noise = [
        tf.random.normal(tf.shape(out)) * m for out, m in zip(clean.outputs, masks, strict=True)
    ]
    directions = _unit(noise, segments)
    with tf.GradientTape() as tape:
        tape.watch(directions)
        with hook.recording(perturbations=[XI * d * sigma for d in directions]):
            y_near = model(x, training=True)
        divergence = _kl(y_pred, y_near)
    gradients = tape.gradient(divergence, directions)
    gradients = [
        tf.zeros_like(d) if g is None else tf.cast(g, tf.float32) * m
        for g, d, m in zip(gradients, directions, masks, strict=True)
    ]
    return [tf.stop_gradient(epsilon * u * sigma) for u in _unit(gradients, segments)]


def _kl(p, q):
    """``KL(p ‖ q)`` of the head's probabilities, ``p`` held constant; mean over the batch."""
    p = tf.stop_gradient(tf.cast(p, tf.float32))
    q = tf.cast(q, tf.float32)
    if p.shape[-1] == 1:  # the sigmoid head: P(class 1)
        p, q = tf.concat([1 - p, p], -1), tf.concat([1 - q, q], -1)
    return keras.losses.KLDivergence()(p, q)


# === Norms per document ===================================================================


def _sigma(layer):
    """The per-dimension standard deviation of the embedding rows (the padding row left out)."""
    table = tf.cast(tf.convert_to_tensor(layer.embeddings)[1:], tf.float32)
    return tf.stop_gradient(tf.maximum(tf.math.reduce_std(table, axis=0), _TINY))


def _word_mask(ids):
    """``[rows, T, 1]``: 1 at words, 0 at padding."""
    return tf.cast(tf.not_equal(ids, 0), tf.float32)[..., None]


def _unit(tensors, segments):
    """Each ``[rows, T, e]`` tensor divided by the L2 norm of its document.

    A document's norm is taken over all its rows (in every tensor); the values
    are first divided by the document's largest magnitude, as Miyato's
    ``_scale_l2``, so that tiny gradients keep their direction.

    Args:
        tensors: float32 tensors, one per call of the embedding.
        segments: ``(rows' documents, count)`` from :func:`_segments`.
    """
    documents, count = segments
    ids = tf.concat(documents, 0)
    largest = tf.concat([tf.reduce_max(tf.abs(t), axis=(1, 2)) for t in tensors], 0)
    alpha = tf.math.unsorted_segment_max(largest, ids, count) + _TINY
    scaled = [
        t / tf.reshape(tf.gather(alpha, d), (-1, 1, 1))
        for t, d in zip(tensors, documents, strict=True)
    ]
    squares = tf.concat([tf.reduce_sum(tf.square(t), axis=(1, 2)) for t in scaled], 0)
    norms = tf.sqrt(tf.math.unsorted_segment_sum(squares, ids, count) + 1e-6)
    return [
        t / tf.reshape(tf.gather(norms, d), (-1, 1, 1))
        for t, d in zip(scaled, documents, strict=True)
    ]


def _segments(x, ids):
    """The document of every row the embedding saw: ``([int32 [rows_k]] per call, count)``.

    Flat models: a row is a document. The dense HAN folds ``[batch, S, W]`` into
    ``[batch · S, W]``; the packed HAN's rows are placed by ``sentence_index``
    (rows of no document go to an extra segment).
    """
    if isinstance(x, dict) and "sentence_index" in x:
        return _packed_segments(x, ids)
    (rows,) = ids  # one call: the flat models and the dense HAN
    tokens = tf.nest.flatten(x)[0]
    count = tf.shape(rows)[0]
    documents = tf.range(count)
    if len(tokens.shape) == 3:  # the dense HAN: [batch, S, W] folded
        documents = documents // tf.shape(tokens)[1]
        count = tf.shape(tokens)[0]
    return [documents], count


def _packed_segments(x, ids):
    """:func:`_segments` of the packed HAN: ``sentence_index[b, s] = i + 1`` for row ``i``."""
    index = tf.cast(x["sentence_index"], tf.int32)
    batch = tf.shape(index)[0]
    names = [f"words_{k}" for k in range(len(x) - 1)]
    sizes = [tf.shape(x[name])[0] for name in names]
    flat = tf.reshape(index, (-1,))
    owner = tf.repeat(tf.range(batch), tf.shape(index)[1])
    present = flat > 0
    row_owner = (
        tf.scatter_nd(
            tf.expand_dims(tf.boolean_mask(flat, present) - 1, 1),
            tf.boolean_mask(owner, present) + 1,
            tf.expand_dims(tf.add_n(sizes), 0),
        )
        - 1
    )
    row_owner = tf.where(row_owner < 0, batch, row_owner)  # rows of no document
    per_group = tf.split(row_owner, tf.stack(sizes), num=len(names))
    order = []
    for call_ids in ids:  # the embedding's calls, matched to their group
        found = [k for k, name in enumerate(names) if call_ids is x[name]]
        if len(found) != 1:
            raise ValueError(
                "Expected each call of the packed HAN's word embedding to read one of its "
                f"inputs {names}. Received: a call on {call_ids!r}"
            )
        order.append(found[0])
    return [per_group[k] for k in order], batch + 1


# === Reading and shifting the embedding's output ===========================================


class _Pass:
    """One forward pass's record: each embedding call's ids and output, in call order."""

    def __init__(self, perturbations=None, tape=None):
        self.perturbations = perturbations
        self.tape = tape
        self.ids = []
        self.outputs = []

    def record(self, ids, outputs):
        if self.perturbations is not None:
            outputs = outputs + tf.cast(self.perturbations[len(self.outputs)], outputs.dtype)
        if self.tape is not None:
            self.tape.watch(outputs)
        self.ids.append(ids)
        self.outputs.append(outputs)
        return outputs


class _EmbeddingHook:
    """Wraps an ``Embedding``'s ``call``: inside :meth:`recording` its outputs are recorded
    (and shifted); outside, the layer computes as before. The state is per thread
    (``tf.distribute`` runs the replicas' steps in threads)."""

    def __init__(self, layer):
        self.layer = layer
        self._local = threading.local()
        original = layer.call

        def call(inputs, *args, **kwargs):
            outputs = original(inputs, *args, **kwargs)
            current = getattr(self._local, "current", None)
            return outputs if current is None else current.record(inputs, outputs)

        layer.call = call

    @contextlib.contextmanager
    def recording(self, perturbations=None, tape=None):
        """Record (and shift by ``perturbations``, one per call) the embedding's outputs."""
        current = _Pass(perturbations, tape)
        self._local.current = current
        try:
            yield current
        finally:
            self._local.current = None
