"""Which steps learn from unlabeled documents, checked before any data is read.

``unlabeled`` documents are used by word2vec (``word_vectors="word2vec"``,
:mod:`hatt.training.starts.word_vectors`), by language-model pretraining (``lm_epochs``,
:mod:`hatt.training.starts.language_model`), by self-training (``pseudo_labels``,
:mod:`hatt.training.self_training`) and by virtual adversarial training
(``adversarial="vat"`` with ``adversarial_unlabeled``, :mod:`hatt.training.run.adversarial`:
its term on batches of them); a run that names unlabeled documents needs one of them.
``init_frozen_epochs`` (gradual unfreezing) and ``discriminative_decay``
(discriminative rates, :mod:`hatt.training.starts.transfer`) need ``init`` or ``lm_epochs``.
"""

from hatt import models

# The families whose encoders the two stages pretrain (FamilySpec.word_encoder, .sentence_encoder).
WORD_PRETRAINED = tuple(f for f in models.FAMILIES if models.family_spec(f).word_encoder)
SENTENCE_PRETRAINED = tuple(f for f in models.FAMILIES if models.family_spec(f).sentence_encoder)
MIN_WORDS = 2  # a row of the language model with fewer words predicts nothing

ADVERSARIAL = ("none", "at", "vat")


def uses_unlabeled(config):
    """The steps of ``config`` that learn from its unlabeled documents, by name."""
    steps = []
    if config.word_vectors == "word2vec":
        steps.append("word2vec")
    if config.lm_epochs:
        steps.append("language_model")
    if config.pseudo_labels:
        steps.append("pseudo_labels")
    if vat_on_unlabeled(config):
        steps.append("vat")
    return steps


def vat_on_unlabeled(config):
    """Whether ``config``'s VAT term is taken on its unlabeled documents (when it has some)."""
    return config.adversarial == "vat" and config.adversarial_unlabeled


def check_pseudo_labeled(config):
    """Raise ``ValueError`` when ``config`` asks for pseudo labels without unlabeled documents
    (called as the run starts, before any data)."""
    if config.pseudo_labels and config.unlabeled is None:
        raise ValueError(
            "Expected unlabeled documents (--unlabeled PATH, or fit(unlabeled=...)) with "
            "pseudo_labels: they are what the teacher labels. Received: pseudo_labels=True, "
            "unlabeled=None"
        )


def check_semi_supervised(config):
    """Raise ``ValueError`` unless ``config``'s unlabeled, self-training, adversarial
    and gradual-unfreezing settings fit together."""
    check_language_model(config)
    _check_unlabeled(config)
    _check_pseudo_labels(config)
    _check_adversarial(config)
    _check_unfreezing(config)


def _check_unlabeled(config):
    """``unlabeled`` needs a step that learns from it and a corpus read as text."""
    if config.unlabeled is None and config.unlabeled_text_column is not None:
        raise ValueError(
            "Expected unlabeled (the unlabeled documents' path) with unlabeled_text_column. "
            f"Received: unlabeled_text_column={config.unlabeled_text_column!r} alone"
        )
    limit = config.unlabeled_limit
    if limit is not None and (isinstance(limit, bool) or limit < 1):
        raise ValueError(
            f"Expected unlabeled_limit to be a positive integer. Received: unlabeled_limit={limit!r}"
        )
    if config.unlabeled is None:
        return
    if not config.unlabeled.strip():
        raise ValueError(
            f"Expected unlabeled to be a path. Received: unlabeled={config.unlabeled!r}"
        )
    if not uses_unlabeled(config) or config.prepared:
        raise ValueError(
            "Expected a corpus read as text (not prepared=) and a step that learns from "
            "unlabeled documents: word_vectors='word2vec', lm_epochs > 0, pseudo_labels=true "
            "or adversarial='vat'. "
            f"Received: word_vectors={config.word_vectors!r}, lm_epochs={config.lm_epochs!r}, "
            f"pseudo_labels={config.pseudo_labels!r}, adversarial={config.adversarial!r}, "
            f"prepared={config.prepared!r} with unlabeled={config.unlabeled!r} "
            "(add --set word_vectors=word2vec)"
        )


def _check_pseudo_labels(config):
    """The threshold's range (the unlabeled documents are checked when training starts:
    ``TextClassifier(pseudo_labels=True)`` gets them at ``fit``)."""
    threshold = config.pseudo_label_threshold
    if threshold is not None and not 0 < threshold < 1:
        raise ValueError(
            "Expected pseudo_label_threshold to be a probability in (0, 1), or null (chosen "
            f"on the validation split). Received: pseudo_label_threshold={threshold!r}"
        )
    limit = config.pseudo_label_limit
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(
            "Expected pseudo_label_limit to be a positive integer or null. "
            f"Received: pseudo_label_limit={limit!r}"
        )
    if limit is not None and not config.pseudo_labels:
        raise ValueError(
            f"Expected pseudo_labels=true with pseudo_label_limit. Received: "
            f"pseudo_label_limit={limit!r}, pseudo_labels=false"
        )
    if threshold is not None and not config.pseudo_labels:
        raise ValueError(
            "Expected pseudo_labels=true with pseudo_label_threshold. Received: "
            f"pseudo_label_threshold={threshold!r}, pseudo_labels=false"
        )


def _check_adversarial(config):
    if config.adversarial not in ADVERSARIAL:
        raise ValueError(
            f"Expected adversarial to be one of {', '.join(map(repr, ADVERSARIAL))}. "
            f"Received: adversarial={config.adversarial!r}"
        )
    for name in ("adversarial_epsilon", "adversarial_weight"):
        value = getattr(config, name)
        if not value > 0:
            raise ValueError(f"Expected {name} to be a number > 0. Received: {name}={value!r}")


def _check_unfreezing(config):
    frozen = config.init_frozen_epochs
    if isinstance(frozen, bool) or not isinstance(frozen, int) or frozen < 0:
        raise ValueError(
            "Expected init_frozen_epochs to be an integer >= 0. "
            f"Received: init_frozen_epochs={frozen!r}"
        )
    if frozen and config.init is None and not config.lm_epochs:
        raise ValueError(
            "Expected init (--init MODEL) or lm_epochs > 0 with init_frozen_epochs: they are "
            "the epochs the layers copied from the model or pretrained as a language model "
            f"stay frozen. Received: init_frozen_epochs={frozen}, init=None, lm_epochs=0"
        )
    decay = config.discriminative_decay
    if isinstance(decay, bool) or not isinstance(decay, (int, float)) or not decay >= 1:
        raise ValueError(
            "Expected discriminative_decay to be a number >= 1 (each layer started elsewhere "
            "trains at the rate of the one above it divided by it; 1: all at the run's rate). "
            f"Received: discriminative_decay={decay!r}"
        )
    if decay != 1 and config.init is None and not config.lm_epochs:
        raise ValueError(
            "Expected init (--init MODEL) or lm_epochs > 0 with discriminative_decay: it "
            "slows the layers copied from the model or pretrained as a language model. "
            f"Received: discriminative_decay={decay}, init=None, lm_epochs=0"
        )
    if frozen and frozen >= config.epochs:
        raise ValueError(
            f"Expected init_frozen_epochs < epochs (some epochs must train every layer). "
            f"Received: init_frozen_epochs={frozen}, epochs={config.epochs}"
        )


# === The language model's settings ================================================


def check_word_pretrained(family):
    """Raise ``ValueError`` unless ``family`` has a word encoder a language model pretrains."""
    if family not in WORD_PRETRAINED:
        raise ValueError(
            f"Expected a family with a recurrent word encoder ({' or '.join(WORD_PRETRAINED)}) "
            f"for language-model pretraining. Received: lm_epochs with model={family!r}; drop "
            "lm_epochs, or start this family's embedding from word2vec (word_vectors='word2vec')."
        )


def check_language_model(config):
    """Raise ``ValueError`` unless the ``lm_*`` settings are usable (no data needed)."""
    for name in ("lm_epochs",):
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"Expected {name} to be an integer >= 0. Received: {name}={value!r}")
    for name in ("lm_negatives", "lm_window", "lm_batch_size"):
        value = getattr(config, name)
        minimum = MIN_WORDS if name == "lm_window" else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(
                f"Expected {name} to be an integer >= {minimum}. Received: {name}={value!r}"
            )
    _check_sentence_epochs(config)
    if config.lm_epochs:
        check_word_pretrained(config.model)
    if config.lm_epochs and config.strategy != "default":
        raise ValueError(
            "Expected strategy='default' with lm_epochs (the language model is pretrained on "
            f"one device). Received: strategy={config.strategy!r}"
        )
    if config.lm_epochs and config.prepared:
        raise ValueError(
            "Expected a corpus read as text with lm_epochs (the language model reads the "
            f"documents in memory). Received: prepared={config.prepared!r}; drop --prepared."
        )


def _check_sentence_epochs(config):
    """``lm_sentence_epochs`` (:mod:`hatt.training.starts.sentence_model`): the HAN, after the LM."""
    epochs = config.lm_sentence_epochs
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 0:
        raise ValueError(
            f"Expected lm_sentence_epochs to be an integer >= 0. Received: "
            f"lm_sentence_epochs={epochs!r}"
        )
    if epochs and config.model not in SENTENCE_PRETRAINED:
        expected = " or ".join(f"model={family!r}" for family in SENTENCE_PRETRAINED)
        raise ValueError(
            f"Expected {expected} with lm_sentence_epochs (it pretrains the HAN's sentence "
            f"encoder). Received: model={config.model!r}"
        )
    if epochs and not config.lm_epochs:
        raise ValueError(
            "Expected lm_epochs > 0 with lm_sentence_epochs: the sentence encoder learns from "
            "sentences read by the word encoder pretrained as a language model first. "
            f"Received: lm_sentence_epochs={epochs}, lm_epochs={config.lm_epochs!r}"
        )
