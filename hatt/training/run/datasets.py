"""The corpus a run trains on, as ONE object whether it comes from raw text or from shards.

:meth:`Corpus.open` either loads IMDB (or takes a loaded :class:`hatt.data.Imdb`),
fits the vocabulary on the training split and encodes the three splits, or
opens the TFRecord shards of ``hatt prepare`` (``config.prepared``) and checks
them against the configuration. Either way the run reads the same things from
it: split sizes, labels and review ids, the vectorizer, the bucketed training /
validation / test datasets, and in-order prediction datasets.
"""

import numpy as np

from hatt import data, models
from hatt.data import prepared as prepared_lib
from hatt.data.corpus import BINARY_CLASSES, SPLITS, count_classes
from hatt.data.text import fingerprints
from hatt.training.run import distribute
from hatt.training.settings import limits
from hatt.training.settings.config import DATA_FIELDS, VOCABULARY_FIELDS
from hatt.training.settings.limits import packed, sentence_groups
from hatt.training.starts import transfer

# === Dataset options shared by both sources ==========================================


def create_vectorizer(config, vocabulary=None):
    """A :class:`hatt.data.Vectorizer` with the config's settings: not yet fitted, or
    holding ``vocabulary`` (all of it: ``max_tokens`` is raised where it is longer)."""
    max_tokens = config.max_tokens
    if vocabulary is not None:
        max_tokens = max(max_tokens, len(vocabulary) + 2)  # + padding and OOV
    return data.Vectorizer(
        max_tokens=max_tokens,
        min_count=config.min_count,
        output_mode=models.family_spec(config.model).layout,
        sequence_length=config.sequence_length,
        max_sentences=config.max_sentences,
        max_words=config.max_words,
        truncation=config.truncation,
        vocabulary=vocabulary,
    )


def _dataset_options(config, vectorizer):
    return {
        "vectorizer": vectorizer,
        "batch_size": config.batch_size,
        "packed": packed(config),
        "sentence_groups": sentence_groups(config) if packed(config) else None,
    }


def _split_dataset(config, vectorizer, name, ids, labels, *, epochs, initial_epoch, replicas):
    """The dataset of one encoded split: train shuffled by ``(seed, epoch)``, others in buckets.

    With several replicas, validation and test keep every review, in order, in
    batches of :func:`hatt.training.run.distribute.evaluation_batch_size`.
    """
    options = {**_dataset_options(config, vectorizer), "num_buckets": config.num_buckets}
    if name != "train" and replicas > 1:
        batch_size = distribute.evaluation_batch_size(config.batch_size, len(labels), replicas)
        return data.make_dataset(
            None, labels, ids=ids, bucketing=False, **{**options, "batch_size": batch_size}
        )
    return data.make_dataset(
        None,
        labels,
        ids=ids,
        shuffle=name == "train",
        seed=config.seed,
        epochs=epochs if name == "train" else None,
        initial_epoch=initial_epoch,
        min_batch_size=replicas,
        **options,
    )


def create_datasets(config, texts, vectorizer, *, epochs=None, initial_epoch=0, replicas=1):
    """Encode every split of ``texts`` once; return its ids and its (bucketed) dataset.

    Args:
        config: a :class:`hatt.training.TrainConfig`.
        texts: a :class:`hatt.data.TextCorpus`.
        vectorizer: the fitted vectorizer.
        epochs, initial_epoch: the training dataset holds the batches of
            epochs ``initial_epoch..epochs-1``, epoch ``e`` shuffled by
            ``(seed, e)`` (``fit`` then needs ``steps_per_epoch``); ``None``:
            one epoch, reshuffled on every iteration.
        replicas: the replicas each batch is split across. With more than
            one, no batch is smaller than ``replicas`` (an empty replica batch
            breaks some CPU kernels): the training set drops such partial
            batches, validation and test keep every review, in order.

    Returns:
        ``{split: (ids, dataset)}`` for train (shuffled, seeded), validation
        and test.
    """
    out = {}
    for name in SPLITS:
        split = getattr(texts, name)
        ids = data.encode(split.texts, vectorizer, progress=True)
        out[name] = (
            ids,
            _split_dataset(
                config,
                vectorizer,
                name,
                ids,
                split.labels,
                epochs=epochs,
                initial_epoch=initial_epoch,
                replicas=replicas,
            ),
        )
    return out


def steps_per_epoch(config, ids, replicas=1):
    """Training batches per epoch (bucketing leaves one partial batch per bucket at most)."""
    lengths = data.pipeline.document_lengths(ids)
    boundaries = data.pipeline.bucket_boundaries(lengths, config.num_buckets)
    return data.pipeline.count_batches(lengths, boundaries, config.batch_size, replicas)


# === Checks ==========================================================================


def check_classes(counts, class_names):
    """Refuse a corpus with fewer than two classes, or a split without every class.

    Args:
        counts: ``{split: reviews per class}``.
        class_names: the classes' names, in label order.
    """
    present = np.sum([np.asarray(c) for c in counts.values()], axis=0) > 0
    missing = [name for name, c in counts.items() if np.min(c) == 0]
    if present.sum() >= 2 and not missing:
        return
    table = "; ".join(
        f"{split} " + ", ".join(f"{n} {int(k)}" for n, k in zip(class_names, c, strict=True))
        for split, c in counts.items()
    )
    problem = (
        "fewer than two classes" if present.sum() < 2 else f"no reviews of some class in {missing}"
    )
    raise ValueError(
        f"Expected every split (train, validation, test) to hold reviews of each of the "
        f"{len(class_names)} classes; the corpus has {problem}. Received: {table}"
    )


def check_prepared(config, manifest):
    """ONE check of a prepared corpus against ``config``: layout, settings, the channel's fit, word vectors."""
    where = repr(config.prepared)
    layout = models.family_spec(config.model).layout
    if manifest["layout"] != layout:
        raise prepared_lib.PreparedDataError(
            f"The corpus in {where} was prepared in the {manifest['layout']} layout "
            f"(for {manifest.get('model')!r}); {config.model!r} needs the {layout} layout. Run "
            f"`hatt prepare --model {config.model} ...` for it."
        )
    differ = {
        k: (v, getattr(config, k))
        for k, v in manifest["settings"].items()
        if k in VOCABULARY_FIELDS and getattr(config, k) != v
    }
    if differ:
        raise prepared_lib.PreparedDataError(
            f"The corpus in {where} was prepared with other settings "
            f"({', '.join(f'{k}: {a!r} != {b!r}' for k, (a, b) in differ.items())}); prepare it "
            "again with these settings or leave them at the prepared values."
        )
    if config.ngram is not None and config.ngram.needs_counts:
        raise prepared_lib.PreparedDataError(
            f"The n-gram channel's fit (ngram.init={config.ngram.init!r}, "
            f"ngram.fit={config.ngram.fit!r}) counts n-grams in the tokenized splits, which a "
            "prepared corpus does not hold in memory. Use --set ngram.init=zeros with "
            "--prepared (ngram.fit='joint'), or train from raw text."
        )
    if config.word_vectors is not None:
        raise prepared_lib.PreparedDataError(
            f"word_vectors={config.word_vectors!r} reads the training split's tokens (for "
            "word2vec and the coverage it reports), which a prepared corpus does not hold in "
            "memory. Use --set word_vectors=null with --prepared, or train from raw text."
        )


# === The corpus =====================================================================


# The TrainConfig fields whose load_corpus argument has another name (the others: the same).
CORPUS_ARGUMENTS = {"data": "source", "test_data": "test"}


def load_texts(config):
    """The raw-text splits `config` asks for (:data:`hatt.training.settings.config.DATA_FIELDS`)."""
    fields = {CORPUS_ARGUMENTS.get(field, field): getattr(config, field) for field in DATA_FIELDS}
    return data.load_corpus(**fields, validation_split=config.validation_split, seed=config.seed)


def read_unlabeled(config, splits, documents=None):
    """The unlabeled documents of ``config.unlabeled`` (``None`` when none): every
    document equal to a validation or test text dropped (:mod:`hatt.data.unlabeled`).

    ``documents``: the documents themselves (a list of str), when
    ``config.unlabeled`` is ``hatt.data.unlabeled.IN_MEMORY_UNLABELED`` (the Python API's).
    """
    if config.unlabeled is None:
        return None
    from hatt.data import unlabeled as unlabeled_lib

    source = config.unlabeled
    if source == unlabeled_lib.IN_MEMORY_UNLABELED:
        if documents is None:
            raise ValueError(
                "Expected the unlabeled documents with unlabeled='(in memory)': a run of "
                "TextClassifier.fit(unlabeled=[...]) resumes only from the same call. "
                "Received: no documents"
            )
        source = list(documents)
    elif source == unlabeled_lib.IMDB_UNLABELED:
        source = unlabeled_lib.find_imdb_unsup(config.data)
    exclude = [*splits["validation"].texts, *splits["test"].texts]
    texts, report = unlabeled_lib.read_unlabeled(
        source,
        text_column=config.unlabeled_text_column,
        exclude=exclude,
        limit=config.unlabeled_limit,
        max_chars=limits.unlabeled_chars(),
    )
    print(unlabeled_lib.summary(report))
    return Unlabeled(texts, report)


class Unlabeled:
    """Unlabeled documents a run learns from: ``texts`` and ``report`` (what reading
    them kept, skipped and excluded: :func:`hatt.data.unlabeled.read_unlabeled`)."""

    def __init__(self, texts, report):
        self.texts = texts
        self.report = report


class Corpus:
    """The three splits a run reads, from raw text or from prepared shards.

    Build it with :meth:`open`. ``ids[split]`` holds the encoded reviews (a
    ``tf.RaggedTensor``) when they are in memory (raw text), ``None`` for a
    prepared corpus (:attr:`in_memory`).
    """

    def __init__(
        self,
        config,
        vectorizer,
        sizes,
        source,
        *,
        class_names,
        splits=None,
        ids=None,
        manifest=None,
    ):
        self.config = config
        self.vectorizer = vectorizer
        self.sizes = dict(sizes)
        self.source = source
        self.ids = ids or dict.fromkeys(SPLITS)
        self._splits = splits  # raw text: {name: data.Split}
        self._manifest = manifest  # prepared: the manifest
        self._labels_and_ids = {}
        self.class_names = tuple(class_names)
        self.unlabeled = None  # Unlabeled documents (config.unlabeled), raw text only
        self.report = {}  # what reading the labelled documents skipped or repaired

    @property
    def num_classes(self):
        return len(self.class_names)

    @property
    def in_memory(self):
        return self.ids["train"] is not None

    @classmethod
    def open(cls, config, texts=None, unlabeled=None, source_words=None):
        """Load and check the corpus of ``config``; see the module docstring.

        Args:
            config: a :class:`hatt.training.TrainConfig`.
            texts: an already read corpus (:class:`hatt.data.TextCorpus`;
                else ``hatt.data.load_corpus`` with the config's settings);
                not used with ``config.prepared``.
            unlabeled: unlabeled documents given in memory (a list of str), for
                ``config.unlabeled="(in memory)"``.
            source_words: the vocabulary of the trained model ``--init`` starts
                from (:func:`hatt.training.starts.transfer.source_words`): it comes
                first in the run's vocabulary, the corpus's other words after it
                (:func:`hatt.training.starts.transfer.joint_vocabulary`); not used with
                ``config.prepared``, whose shards hold their ids.

        Raises:
            ValueError: a class is missing from a split;
                ``hatt.data.prepared.PreparedDataError``: the shards do not fit
                the configuration.
        """
        if config.prepared:
            return cls._from_shards(config)
        return cls._from_text(config, texts, unlabeled, source_words)

    @classmethod
    def _from_text(cls, config, texts, unlabeled=None, source_words=None):
        if texts is None:
            texts = load_texts(config)
        splits = {name: getattr(texts, name) for name in SPLITS}
        corpus = cls(
            config,
            None,
            {n: len(s) for n, s in splits.items()},
            texts.source,
            class_names=getattr(texts, "class_names", BINARY_CLASSES),
            splits=splits,
        )
        corpus.check_classes()
        corpus.report = dict(getattr(texts, "report", None) or {})
        corpus.unlabeled = read_unlabeled(config, splits, unlabeled)
        vocabulary_texts = list(texts.train.texts)
        also = ""
        if corpus.unlabeled is not None and config.unlabeled_vocabulary:
            vocabulary_texts += corpus.unlabeled.texts
            also = f" and {len(corpus.unlabeled.texts)} unlabeled documents"
        print(f"Fitting the vocabulary on {len(texts.train)} training reviews{also}")
        corpus.vectorizer = create_vectorizer(config).adapt(vocabulary_texts, progress=True)
        if source_words is not None:
            own = corpus.vectorizer.get_vocabulary(include_special_tokens=False)
            words = transfer.joint_vocabulary(source_words, own)
            corpus.vectorizer = create_vectorizer(config, words)
            print(
                f"Vocabulary (--init): the trained model's {len(source_words):,} words, then "
                f"{len(words) - len(source_words):,} of the corpus's {len(own):,} it lacks"
            )
        print("Tokenizing train / validation / test")
        corpus.ids = {
            name: data.encode(split.texts, corpus.vectorizer, progress=True)
            for name, split in splits.items()
        }
        return corpus

    @classmethod
    def _from_shards(cls, config):
        manifest = prepared_lib.read_manifest(config.prepared)
        check_prepared(config, manifest)
        sizes = {name: int(manifest["splits"][name]["reviews"]) for name in SPLITS}
        source = f"{manifest['source']} (prepared: {config.prepared})"
        vectorizer = prepared_lib.load_vectorizer(config.prepared)
        class_names = manifest.get("class_names") or BINARY_CLASSES
        corpus = cls(config, vectorizer, sizes, source, class_names=class_names, manifest=manifest)
        corpus.check_classes()
        return corpus

    # --- what the run reads -----------------------------------------------------------

    def training_fingerprints(self):
        """The fingerprints of the documents the model trains on (train and validation
        splits; :func:`hatt.data.text.fingerprints`), sorted and unique; ``None`` for a
        prepared corpus, whose shards hold no text."""
        if self._splits is None:
            return None
        texts = [*self._splits["train"].texts, *self._splits["validation"].texts]
        return np.unique(fingerprints(texts)).astype(np.int64)

    def class_counts(self, split):
        """Reviews per class in ``split``."""
        if self._manifest is not None:  # counted when the shards were written
            info = self._manifest["splits"][split]
            if "class_counts" in info:
                return np.asarray(info["class_counts"], np.int64)
            return np.array([info["reviews"] - info["positive"], info["positive"]])
        return count_classes(self._splits[split].labels, self.num_classes)

    def check_classes(self):
        check_classes({name: self.class_counts(name) for name in SPLITS}, self.class_names)

    def labels(self, split):
        """The labels of ``split`` in its order."""
        if self._splits is not None:
            return np.asarray(self._splits[split].labels)
        return self._read_labels_and_ids(split)[0]

    def review_ids(self, split):
        """The review ids of ``split`` in its order."""
        if self._splits is not None:
            return self._splits[split].ids
        return self._read_labels_and_ids(split)[1]

    def _read_labels_and_ids(self, split):
        if split not in self._labels_and_ids:
            self._labels_and_ids[split] = prepared_lib.split_labels_and_ids(
                self.config.prepared, split, self._manifest
            )
        return self._labels_and_ids[split]

    def in_memory_split(self, split):
        """``(ids, labels)`` of ``split`` for the n-gram channel's fit; ``None`` from shards."""
        return (self.ids[split], self.labels(split)) if self.in_memory else None

    def datasets(self, *, epochs=None, initial_epoch=0, replicas=1):
        """``{split: dataset}``: train shuffled by ``(seed, epoch)``, validation and test.

        ``epochs``, ``initial_epoch`` and ``replicas`` as in :func:`create_datasets`.
        """
        if self.in_memory:
            return {
                name: _split_dataset(
                    self.config,
                    self.vectorizer,
                    name,
                    self.ids[name],
                    self.labels(name),
                    epochs=epochs,
                    initial_epoch=initial_epoch,
                    replicas=replicas,
                )
                for name in SPLITS
            }
        return {
            name: self._shard_dataset(
                name, epochs=epochs, initial_epoch=initial_epoch, replicas=replicas
            )
            for name in SPLITS
        }

    def _shard_dataset(self, name, *, epochs, initial_epoch, replicas):
        config = self.config
        evaluation = name != "train" and replicas > 1
        batch_size = config.batch_size
        if evaluation:
            batch_size = distribute.evaluation_batch_size(batch_size, self.sizes[name], replicas)
        return prepared_lib.prepared_dataset(
            config.prepared,
            name,
            batch_size=batch_size,
            shuffle=name == "train",
            seed=config.seed,
            shuffle_buffer=config.shuffle_buffer,
            bucketing=not evaluation,
            num_buckets=config.num_buckets,
            packed=sentence_groups(config) if packed(config) else None,
            epochs=epochs,
            initial_epoch=initial_epoch,
            manifest=self._manifest,
            min_batch_size=replicas if name == "train" else 1,
        )

    def steps_per_epoch(self, replicas=1):
        """Training batches per epoch (from the ids, or the shards' length histogram)."""
        if self.in_memory:
            return steps_per_epoch(self.config, self.ids["train"], replicas)
        lengths = prepared_lib.split_lengths(self._manifest, "train")
        boundaries = data.pipeline.bucket_boundaries(lengths, self.config.num_buckets)
        return data.pipeline.count_batches(lengths, boundaries, self.config.batch_size, replicas)

    def unlabeled_batches(self, ids, replicas=1):
        """Endless batches of the unlabeled documents ``ids`` (inputs only), for VAT's term.

        Shuffled pass after pass by the run's seed and bucketed as the training split
        is (:func:`hatt.data.make_dataset` with ``repeat``); the same seed gives the same
        stream, so a run resumed at step ``k`` reads it from its ``k``-th batch.

        Returns:
            A ``tf.data.Dataset``, or ``None`` when the documents fill no batch.
        """
        config = self.config
        if steps_per_epoch(config, ids, replicas) < 1:
            return None
        return data.make_dataset(
            None,
            ids=ids,
            shuffle=True,
            repeat=True,
            seed=config.seed,
            num_buckets=config.num_buckets,
            min_batch_size=replicas,
            **_dataset_options(config, self.vectorizer),
        )

    def prediction_dataset(self, split, replicas=1):
        """``split`` in its order, inputs only (no bucketing), for ``model.predict``."""
        config = self.config
        batch_size = distribute.evaluation_batch_size(
            config.batch_size, self.sizes[split], replicas
        )
        if not self.in_memory:
            return prepared_lib.prepared_dataset(
                config.prepared,
                split,
                batch_size=batch_size,
                bucketing=False,
                packed=sentence_groups(config) if packed(config) else None,
            ).map(lambda x, y: x)
        return data.make_dataset(
            None,
            ids=self.ids[split],
            bucketing=False,
            **{**_dataset_options(config, self.vectorizer), "batch_size": batch_size},
        )
