"""The end-to-end runs with word vectors that two test modules share
(tests/training/test_word_vectors.py, tests/training/test_unlabeled_training.py): each
made once a session, under pytest-xdist once for all workers (``made_once``).

- :func:`word2vec_run`: ``TextClassifier.fit(corpus, unlabeled=[...])``, word2vec
  over the training split and the unlabeled documents, which the vocabulary reads too
  (``unlabeled_vocabulary=True``); enough epochs that it learns the planted cue.
- :func:`cli_run`: ``hatt train rnn --data FOLDER --unlabeled FOLDER`` (in this
  process, ``cli.main``), word2vec with the defaults (the vocabulary does not read the
  unlabeled documents), its vectors kept as word2vec gave them
  (``word_vectors_trainable=false``, ``word_vectors_scale=none``); its printout kept.
"""

import contextlib
import io
import json

import hatt
from hatt import cli
from hatt.data import Imdb
from tests._planted import planted_split
from tests.conftest import made_once, shared_folder

ONLY_UNLABELED = "zyzzogeton"  # a word no labeled document holds
SETTINGS = {
    "min_count": 1,
    "batch_size": 16,
    "learning_rate": 1e-2,
    "epochs": 3,
    "patience": 3,
    "ngram": None,
    "word_vectors": "word2vec",
    "word_vectors_epochs": 2,
}
MODEL = {"embedding_dim": 8, "units": 4}


def corpus():
    return Imdb(planted_split(160, 0), planted_split(40, 1), planted_split(40, 2), "planted")


def unlabeled_documents(corpus):
    """New documents with a word of their own, one copy of a test text and one empty."""
    new = [f"The {ONLY_UNLABELED} scene was a {ONLY_UNLABELED} delight {i}." for i in range(30)]
    return [*new, corpus.test.texts[3].upper(), "   "]


def _fit(folder):
    texts = corpus()
    clf = hatt.TextClassifier("rnn", preset=None, unlabeled_vocabulary=True, **SETTINGS, **MODEL)
    clf.fit(texts, run_dir=folder / "run", verbose=0, unlabeled=unlabeled_documents(texts))
    facts = {"run_dir": folder / "run", "metrics": clf.metrics}
    return facts, facts


def _write_folders(texts, root):
    """The train and test splits as IMDB's folders, the unlabeled documents as a folder
    of files: what ``hatt train --data --unlabeled`` reads."""
    for split, name in ((texts.train, "train"), (texts.test, "test")):
        for i, (text, label) in enumerate(zip(split.texts, split.labels, strict=True)):
            folder = root / "data" / name / ("pos" if label else "neg")
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{i}.txt").write_text(text)
    (root / "unsup").mkdir()
    for i, text in enumerate(unlabeled_documents(texts)):
        (root / "unsup" / f"{i}.txt").write_text(text)
    return root / "data", root / "unsup"


def _cli(folder):
    data, unsup = _write_folders(corpus(), folder)
    settings = {
        **SETTINGS,
        "epochs": 1,
        "model_kwargs": MODEL,
        "word_vectors_trainable": False,
        "word_vectors_scale": "none",
    }
    command = ["train", "rnn", "--data", str(data), "--unlabeled", str(unsup)]
    command += ["--run-dir", str(folder / "run"), "--export-dir", "", "--preset", "none"]
    for key, value in settings.items():
        command += ["--set", f"{key}={json.dumps(value)}"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = cli.main(command)
    facts = {"run_dir": folder / "run", "unsup": unsup, "code": code, "printed": printed.getvalue()}
    return facts, facts


_MADE = {}  # this process's runs, by name (one pytest session a process)


def _made(name, tmp_path_factory):
    if name not in _MADE:
        root = shared_folder(tmp_path_factory, "starts_runs")
        make = {"word2vec": _fit, "cli": _cli}[name]
        _MADE[name] = made_once(root, name, lambda: make(root / name), lambda facts: facts)
    return _MADE[name]


def word2vec_run(tmp_path_factory):
    """``{"run_dir", "metrics"}`` of the fit with unlabeled documents."""
    return _made("word2vec", tmp_path_factory)


def cli_run(tmp_path_factory):
    """``{"run_dir", "unsup", "code", "printed"}`` of ``hatt train --unlabeled``."""
    return _made("cli", tmp_path_factory)
