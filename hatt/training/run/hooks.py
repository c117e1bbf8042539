"""The methods a run calls through :class:`hatt.training.run.record.RunHook`, in one list.

:data:`METHODS` is the registry: the loop calls each hook at each of its points in
this order (word vectors, then ``--init``'s weights, then the language model over
both, then adversarial training's train step). The starting points' hooks are here,
over :mod:`hatt.training.starts`; adversarial training's is in its own module
(:class:`hatt.training.run.adversarial.AdversarialHook`).
"""

from hatt import run_dir as run_files
from hatt.training.run import adversarial
from hatt.training.run.record import RunHook
from hatt.training.starts import sentence_model, transfer, word_vectors


class WordVectorsHook(RunHook):
    """``word_vectors``: the embedding starts from word vectors of the training split and
    the unlabeled documents (``word_vectors.json``; ``unlabeled.json`` says what was read),
    frozen with ``word_vectors_trainable=false``.

    A prepared corpus never gets here with word vectors (``check_prepared``).
    """

    def check(self, config, model):
        if config.word_vectors is not None:
            word_vectors.check_source(config.word_vectors)
            word_vectors.embedding_layer(model)

    def configure(self, config, model):
        if config.word_vectors is not None and not config.word_vectors_trainable:
            word_vectors.embedding_layer(model).trainable = False

    def before_fit(self, run, model, corpus):
        if run.config.word_vectors is None:
            return
        train_ids, _ = corpus.in_memory_split("train")
        info = word_vectors.init_word_vectors(
            model,
            run.config,
            train_ids,
            corpus.vectorizer.get_vocabulary(),
            unlabeled_ids=run.encoded_unlabeled(corpus),
            cache_path=run.run_dir / word_vectors.CACHE_FILE,
        )
        run.write_json(run_files.WORD_VECTORS, info)


class StartFromModelHook(RunHook):
    """``init``: copy a trained model's weights in (:mod:`hatt.training.starts.transfer`;
    the source is loaded before the data, into ``run.init_source``)."""

    def before_fit(self, run, model, corpus):
        if run.config.init is None:
            return
        source = run.init_source or transfer.load_source(run.config.init, run.config.model)
        info = transfer.init_from_model(model, corpus.vectorizer, corpus.class_names, source)
        print(transfer.summary(info))
        run.write_json(run_files.INIT, info)


class LanguageModelHook(RunHook):
    """``lm_epochs``: the word encoder trained as a language model on the training split and
    the unlabeled documents (:mod:`hatt.training.starts.language_model`; with
    ``lm_sentence_epochs``, the HAN's sentence encoder next,
    :mod:`~hatt.training.starts.sentence_model`), after the word vectors and ``init`` it
    starts from; resumes from its checkpoints."""

    def before_fit(self, run, model, corpus):
        if not run.config.lm_epochs:
            return
        with run.strategy.scope():  # the word encoder, then (lm_sentence_epochs) the sentences
            sentence_model.pretrain_encoders(
                model,
                run.config,
                corpus.in_memory_split("train")[0],
                run.encoded_unlabeled(corpus),
                corpus.in_memory_split("validation")[0],
                run_dir=run.run_dir,
                verbose=run.verbose,
            )


# The registry: one line a method, called in this order at every point.
METHODS = (
    WordVectorsHook(),
    StartFromModelHook(),
    LanguageModelHook(),
    adversarial.AdversarialHook(),
)
