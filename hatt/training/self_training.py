"""Self-training (``pseudo_labels=true``): a teacher labels the unlabeled documents,
a student learns from the labeled and the confident ones.

A run with ``pseudo_labels`` is two runs of the same settings:

1. the **teacher**, trained on the labeled documents in ``RUN_DIR/teacher/`` (a
   full run: deep part and n-gram channel weighed on validation, so its labels
   come from that small ensemble, not from the deep part alone; word2vec, if on,
   also learns from the unlabeled documents);
2. its probabilities on every unlabeled document (those equal to a validation or
   test text never reach it: :func:`hatt.training.run.datasets.read_unlabeled`);
3. the **threshold** of confidence: given, or chosen on the validation split as
   the lowest of :data:`THRESHOLDS` at which the teacher's validation documents
   that confident are right at least :data:`TARGET_PRECISION` of the time (the
   labels the student gets are then about that clean); the table of every
   candidate is written to ``pseudo_labels.json``;
4. the confident documents, **balanced** to the training split's class shares
   (the most confident of each class; a teacher that leans to one class would
   otherwise teach the student to lean further), at most ``pseudo_label_limit``;
5. the **student**: the same settings trained in ``RUN_DIR`` on the labeled
   training split plus those documents (the n-gram channel's NB ratios learn from
   them too), validated and tested on the same splits as the teacher. Its
   ``metrics.json`` is the run's, with the teacher's figures and the pseudo
   labels' summary added under ``"self_training"``.

The teacher's run and its probabilities (``teacher_probabilities.npz``) are kept: a
run interrupted in the student resumes there without training the teacher again, and a
run with another threshold or limit reuses them (a teacher of other settings is refused).

Self-training wraps the plain run as scikit-learn's ``SelfTrainingClassifier`` wraps
an estimator: :func:`train` is given the function that trains one run (``fit``) and
calls it twice, and that run knows nothing of teachers and students.
:func:`hatt.training.train` decides to wrap (``pseudo_labels=true``).

    >>> config = assemble_config("rnn", unlabeled="unsup.txt", pseudo_labels=True)
    >>> metrics = hatt.training.train(config, "runs/rnn-self")  # calls train() here
"""

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np

from hatt import run_dir as run_files
from hatt.data.corpus import Split, TextCorpus, count_classes
from hatt.training.run import datasets as corpus_lib
from hatt.training.run import resume
from hatt.training.settings import semi

THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99)
TARGET_PRECISION = 0.95
BATCH = 512  # unlabeled documents the teacher labels a call


def choose_threshold(probabilities, labels, thresholds=THRESHOLDS, target=TARGET_PRECISION):
    """The lowest confidence at which the teacher is right ``target`` of the time.

    Args:
        probabilities: ``[N, C]`` class probabilities of the validation documents.
        labels: ``[N]`` their true classes.
        thresholds: the candidates, ascending.
        target: the precision wanted among the documents at least that confident.

    Returns:
        ``(threshold, table)``: the threshold (the highest candidate when none
        reaches ``target``) and one row a candidate: ``threshold``, ``coverage``
        (the share of documents that confident) and ``precision`` (``None`` when
        none is).
    """
    probabilities = np.asarray(probabilities, np.float64)
    confidence = probabilities.max(axis=1)
    right = probabilities.argmax(axis=1) == np.asarray(labels)
    table = []
    for threshold in thresholds:
        kept = confidence >= threshold
        precision = float(right[kept].mean()) if kept.any() else None
        table.append(
            {"threshold": threshold, "coverage": float(kept.mean()), "precision": precision}
        )
    chosen = next(
        (row["threshold"] for row in table if (row["precision"] or 0.0) >= target),
        thresholds[-1],
    )
    return chosen, table


def select(probabilities, threshold, class_shares, limit=None):
    """The unlabeled documents to teach: confident ones, balanced to ``class_shares``.

    Args:
        probabilities: ``[N, C]`` the teacher's probabilities.
        threshold: the confidence kept.
        class_shares: ``[C]`` the training split's class shares (sum 1).
        limit: at most this many documents in all (``None``: no limit).

    Returns:
        ``(indices, labels, confidence)`` of the kept documents, most confident
        first within each class; the largest set with every class in its share
        that the confident documents allow.
    """
    probabilities = np.asarray(probabilities, np.float64)
    shares = np.asarray(class_shares, np.float64)
    labels = probabilities.argmax(axis=1)
    confidence = probabilities.max(axis=1)
    confident = confidence >= threshold
    available = count_classes(labels[confident], len(shares))
    with np.errstate(divide="ignore"):
        total = np.min(np.where(shares > 0, available / shares, np.inf))
    total = 0 if not np.isfinite(total) else min(total, limit if limit is not None else total)
    quota = np.floor(shares * total).astype(np.int64)
    chosen = []
    for label, count in enumerate(quota):
        mine = np.flatnonzero(confident & (labels == label))
        chosen.append(mine[np.argsort(-confidence[mine], kind="stable")][:count])
    indices = np.concatenate(chosen) if chosen else np.zeros(0, np.int64)
    return indices, labels[indices], confidence[indices]


def train(config, run_dir, *, fit, texts=None, unlabeled=None, restart=False, **kwargs):
    """Steps 1-5 of the module docstring: ``fit`` trains the teacher, then the student.

    Args:
        config: the run's settings (``pseudo_labels=true``, ``unlabeled`` set).
        run_dir: the student's run directory (the teacher's inside it).
        fit: the function that trains one run, as
            :func:`hatt.training.run.loop.train` (``fit(config, run_dir, texts=...,
            unlabeled=..., **kwargs)`` returns the run's metrics); the wrapped run.
        texts, unlabeled, restart: as ``loop.train``'s; ``kwargs``: the rest of
            its arguments, given to both runs.

    Returns:
        The student's metrics dict (also ``RUN_DIR/metrics.json``).

    Raises:
        ValueError: no unlabeled documents.
        hatt.training.run.resume.RunError: ``run_dir`` holds a finished run or a
            backup of other settings (checked before the teacher trains).
    """
    semi.check_pseudo_labeled(config)
    run_dir = Path(run_dir)
    resume.check_run_dir(  # as loop.check_run will: before the teacher's hours, not after
        run_dir, config.to_dict(), restart=restart, normalize=config.saved_form
    )
    if restart:
        shutil.rmtree(run_dir / run_files.TEACHER, ignore_errors=True)
        for name in run_files.SELF_TRAINING_OUTPUTS:
            (run_dir / name).unlink(missing_ok=True)
    if texts is None:
        texts = corpus_lib.load_texts(config)
    teacher = _teacher(config, run_dir / run_files.TEACHER, texts, unlabeled, fit, kwargs)
    documents = corpus_lib.read_unlabeled(config, _splits(texts), unlabeled).texts
    pseudo = _pseudo_labels(config, run_dir, teacher, texts, documents)
    student_texts = _student_corpus(texts, documents, pseudo)
    metrics = fit(
        config, run_dir, texts=student_texts, unlabeled=unlabeled, restart=restart, **kwargs
    )
    summary = run_dir / run_files.PSEUDO_LABELS_SUMMARY
    metrics["self_training"] = json.loads(summary.read_text())
    run_files.write_metrics(run_dir, metrics)
    return metrics


# === Steps ==========================================================================


def _splits(texts):
    return {"train": texts.train, "validation": texts.validation, "test": texts.test}


def _teacher(config, teacher_dir, texts, unlabeled, fit, kwargs):
    """Step 1: the teacher's metrics, trained now unless its run finished before."""
    changes = {"pseudo_labels": False, "pseudo_label_threshold": None, "pseudo_label_limit": None}
    if semi.uses_unlabeled(config) == ["pseudo_labels"]:  # nothing else learns from them
        changes.update(unlabeled=None, unlabeled_text_column=None, unlabeled_limit=None)
    teacher_config = dataclasses.replace(config, **changes)
    metrics_path = teacher_dir / run_files.METRICS
    if metrics_path.is_file():
        _check_teacher(teacher_dir, teacher_config)
        print(f"Self-training: the teacher's run in {teacher_dir} is done; reusing it")
        return json.loads(metrics_path.read_text())
    print(f"Self-training, step 1 of 2: the teacher, in {teacher_dir}")
    uses = teacher_config.unlabeled is not None
    return fit(
        teacher_config, teacher_dir, texts=texts, unlabeled=unlabeled if uses else None, **kwargs
    )


def _check_teacher(teacher_dir, teacher_config):
    """A finished teacher is reused only when it was trained with the settings asked now."""
    saved = json.loads((teacher_dir / run_files.CONFIG).read_text())
    saved, wanted = teacher_config.saved_form(saved), teacher_config.to_dict()
    for key in ("scale", "scaled"):  # what the run changed for its corpus size
        saved.pop(key, None), wanted.pop(key, None)
    differ = sorted(k for k in set(saved) | set(wanted) if saved.get(k) != wanted.get(k))
    if differ:
        changes = ", ".join(f"{k}: {saved.get(k)!r} -> {wanted.get(k)!r}" for k in differ)
        raise resume.RunError(
            f"The teacher in {str(teacher_dir)!r} was trained with other settings ({changes}). "
            "Pass --restart to train the teacher and the student again, or use another --run-dir."
        )


def _pseudo_labels(config, run_dir, teacher, texts, documents):
    """Steps 2-4: the kept documents' ``(indices, labels)``; the teacher's probabilities
    of every unlabeled document cached in ``run_dir``."""
    teacher_dir = run_dir / run_files.TEACHER
    validation = _as_matrix(np.load(teacher_dir / run_files.VALIDATION_PROBABILITIES))
    threshold, table = config.pseudo_label_threshold, None
    if threshold is None:
        threshold, table = choose_threshold(validation, texts.validation.labels)
    probabilities = _teacher_probabilities(run_dir, documents)
    shares = count_classes(texts.train.labels, texts.num_classes) / len(texts.train)
    indices, labels, confidence = select(
        probabilities, threshold, shares, config.pseudo_label_limit
    )
    np.savez_compressed(
        run_dir / run_files.PSEUDO_LABELS, indices=indices, labels=labels, confidence=confidence
    )
    summary = _summary(teacher, threshold, table, documents, probabilities, labels, texts)
    summary["limit"] = config.pseudo_label_limit
    run_files.write_json_atomic(run_dir / run_files.PSEUDO_LABELS_SUMMARY, summary)
    print(
        f"Self-training: {len(indices)} of {len(documents)} unlabeled documents kept at "
        f"confidence >= {threshold} ({summary['chosen']}); per class "
        f"{summary['kept_per_class']}"
    )
    return indices, labels


def _teacher_probabilities(run_dir, documents):
    """Step 2, once: the teacher's ``[N, C]`` probabilities of ``documents`` (cached)."""
    cache = run_dir / run_files.TEACHER_PROBABILITIES
    if cache.is_file():
        with np.load(cache) as saved:
            if int(saved["documents"]) == len(documents):
                return saved["probabilities"]
    probabilities = _label_unlabeled(run_dir / run_files.TEACHER, documents)
    run_dir.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(cache, probabilities=probabilities, documents=len(documents))
    return probabilities


def _as_matrix(saved):
    """A saved ``*_probabilities.npz``'s probabilities as ``[N, C]``."""
    probabilities = np.asarray(saved["probabilities"], np.float64)
    if probabilities.ndim == 1:
        probabilities = np.stack([1.0 - probabilities, probabilities], axis=1)
    return probabilities


def _label_unlabeled(teacher_dir, documents):
    """Step 2: the teacher's ``[N, C]`` probabilities of ``documents``, with a bar."""
    from hatt import export
    from hatt.progress import Progress

    predictor = export.load(teacher_dir)
    print(f"Self-training: the teacher labels {len(documents)} unlabeled documents")
    bar = Progress(len(documents))
    parts = []
    for start in range(0, len(documents), BATCH):
        batch = documents[start : start + BATCH]
        parts.append(predictor.predict(batch)["probabilities"].astype(np.float64))
        bar.update(start + len(batch))
    if not parts:
        return np.zeros((0, predictor.num_classes))
    return np.concatenate(parts)


def _summary(teacher, threshold, table, documents, probabilities, labels, texts):
    """``pseudo_labels.json``: what the student was taught and why."""
    confident = int((probabilities.max(axis=1) >= threshold).sum()) if len(documents) else 0
    return {
        "threshold": threshold,
        "chosen": "given" if table is None else f"on validation, precision >= {TARGET_PRECISION}",
        "thresholds": table,
        "unlabeled_documents": len(documents),
        "confident": confident,
        "kept": int(len(labels)),
        "kept_per_class": {
            name: int(n)
            for name, n in zip(
                texts.class_names, count_classes(labels, texts.num_classes), strict=True
            )
        },
        "teacher": {
            key: teacher.get(key)
            for key in ("test_accuracy", "validation_accuracy", "test_macro_f1", "train_seconds")
        },
    }


def _student_corpus(texts, documents, pseudo):
    """Step 5's corpus: the labeled training split plus the pseudo-labeled documents."""
    indices, labels = pseudo
    train = texts.train
    ids = list(train.ids) if train.ids else [f"train/{i}" for i in range(len(train))]
    student_train = Split(
        [*train.texts, *(documents[i] for i in indices)],
        np.concatenate([np.asarray(train.labels, np.int64), np.asarray(labels, np.int64)]),
        [*ids, *(f"unlabeled/{i}" for i in indices)],
    )
    report = {**texts.report, "pseudo_labels": len(indices)}  # what its train split adds
    return TextCorpus(
        student_train, texts.validation, texts.test, texts.source, texts.class_names, report
    )
