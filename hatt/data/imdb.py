"""IMDB movie reviews (Maas et al. 2011) from raw text.

Three sources, tried in this order:

1. ``source=`` (``--data PATH`` on the command line): an ``aclImdb`` folder
   (or the folder holding it), or a ``.tar.gz`` of one. A tarball is
   extracted once into the cache folder (``$HATT_CACHE``, default
   ``~/.cache/hatt``), with a progress bar, and re-used afterwards.
2. The environment variable ``HATT_IMDB``, holding such a path.
3. ``tensorflow_datasets.load("imdb_reviews")``, which downloads the data
   when there is a network.

The validation split is carved out of ``train`` (stratified, seeded) and is
disjoint from what remains of it; ``test`` is only for the final figure.

IMDB's ``train/`` and ``test/`` hold different movies, but within ``train/``
a movie has up to 30 reviews, and the review ids come grouped by movie
(``experiments/validation_leak.py``: consecutive ids share rare names 243x
more often than random pairs). A validation split of random reviews therefore
shares movies with the training reviews and rewards memorising cast names,
which the test split does not. By default the validation split is made of
whole blocks of consecutive ids (``validation_split="blocks"``), so it is
close to movie-disjoint, like the test split.
"""

import dataclasses
import hashlib
import os
import sys
import tarfile
from pathlib import Path

import numpy as np

from hatt.data.files import NotTextError, decode_text

ENV_VAR = "HATT_IMDB"
CACHE_ENV_VAR = "HATT_CACHE"
_LABELS = {"neg": 0, "pos": 1}


class DataNotFoundError(FileNotFoundError):
    """No usable IMDB source was found (the message says how to give one)."""


def _how_to_provide(reason):
    return (
        f"Could not load IMDB: {reason}\n"
        "Provide the data in one of three ways:\n"
        "  1. pass a path: load_imdb('/path/to/aclImdb') or `hatt ... --data /path/to/aclImdb`"
        " (an aclImdb folder or a .tar.gz of one, e.g. aclImdb_v1.tar.gz);\n"
        f"  2. set the environment variable {ENV_VAR}=/path/to/aclImdb (folder or .tar.gz);\n"
        "  3. with a network, let tensorflow-datasets download it: "
        "tfds.load('imdb_reviews') (pip install tensorflow-datasets)."
    )


@dataclasses.dataclass
class Split:
    """One split of the corpus: raw review texts, labels (1 = positive) and ids.

    ``ids`` name each review's origin (``"train/pos/123_9"`` for a file,
    ``"train/17"`` for tensorflow-datasets); IMDB has duplicate texts, so ids,
    not texts, tell reviews apart.
    """

    texts: list
    labels: np.ndarray
    ids: list = dataclasses.field(default_factory=list)

    def __len__(self):
        return len(self.texts)

    def subset(self, indices):
        indices = np.asarray(indices, dtype=np.int64)
        ids = [self.ids[i] for i in indices] if self.ids else []
        return Split([self.texts[i] for i in indices], self.labels[indices], ids)


@dataclasses.dataclass
class Imdb:
    """The three splits, and where they came from."""

    train: Split
    validation: Split
    test: Split
    source: str

    def __repr__(self):
        return (
            f"Imdb(train={len(self.train)}, validation={len(self.validation)}, "
            f"test={len(self.test)}, source={self.source!r})"
        )


def cache_dir():
    """Folder where tarballs are extracted (``$HATT_CACHE`` or ``~/.cache/hatt``)."""
    return Path(os.environ.get(CACHE_ENV_VAR) or Path.home() / ".cache" / "hatt")


def _find_root(folder):
    """The ``aclImdb`` folder at or just below ``folder`` (or None)."""
    folder = Path(folder)
    for candidate in (folder, folder / "aclImdb"):
        if (candidate / "train").is_dir() and (candidate / "test").is_dir():
            return candidate
    return None


def _extract(tarball, progress=True):
    """Extract ``tarball`` once into the cache and return the aclImdb root."""
    import keras

    tarball = Path(tarball)
    stat = tarball.stat()
    key = hashlib.sha1(f"{tarball.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    target = cache_dir() / f"{tarball.name.split('.')[0]}-{key.hexdigest()[:10]}"
    done = target / ".complete"
    if not done.exists():
        target.mkdir(parents=True, exist_ok=True)
        try:
            with tarfile.open(tarball, "r:*") as archive:
                members = [
                    m
                    for m in archive.getmembers()
                    if (m.isfile() or m.isdir()) and "/unsup/" not in m.name + "/"
                ]
                bar = keras.utils.Progbar(len(members), unit_name="file") if progress else None
                if progress:
                    print(f"Extracting {tarball} into {target} (once)")
                for i, member in enumerate(members):
                    archive.extract(member, target, filter="data")
                    if bar is not None and (i % 500 == 0 or i == len(members) - 1):
                        bar.update(i + 1)
        except (tarfile.TarError, EOFError, OSError) as error:
            raise DataNotFoundError(
                _how_to_provide(f"{tarball} is not a readable .tar.gz ({error}).")
            ) from error
        done.write_text(str(tarball.resolve()))
    root = _find_root(target)
    if root is None:
        raise DataNotFoundError(
            _how_to_provide(f"{tarball} holds no aclImdb/train and aclImdb/test folders.")
        )
    return root


def _read_split(root, split, progress=True):
    import keras

    files = []
    for name, label in _LABELS.items():
        folder = Path(root) / split / name
        if not folder.is_dir():
            raise DataNotFoundError(_how_to_provide(f"missing folder {folder}."))
        # Sort by the numeric review id so the order never depends on the file system.
        paths = sorted(folder.glob("*.txt"), key=lambda p: (_review_id(p), p.name))
        files.extend((p, label) for p in paths)
    bar = keras.utils.Progbar(len(files), unit_name="review") if progress else None
    texts, kept, skipped, repaired = [], [], [], 0
    for i, (path, label) in enumerate(files):
        # Reviews are UTF-8; a few bytes elsewhere may not be (replaced, counted); a
        # file that is not text at all (an image dropped in a class folder) is skipped.
        try:
            text, replaced = decode_text(path.read_bytes(), repr(str(path)))
        except NotTextError:
            skipped.append(path)
        else:
            texts.append(text)
            kept.append((path, label))
            repaired += replaced
        if bar is not None and (i % 1000 == 0 or i == len(files) - 1):
            bar.update(i + 1)
    _report_files(split, skipped, repaired)
    labels = np.array([label for _, label in kept], dtype=np.int64)
    ids = [f"{split}/{path.parent.name}/{path.stem}" for path, _ in kept]
    return Split(texts, labels, ids)


def _report_files(split, skipped, repaired):
    """Say on stderr what reading a split's files skipped or repaired (never silent)."""
    if skipped:
        names = ", ".join(str(p) for p in skipped[:3]) + (" ..." if len(skipped) > 3 else "")
        print(
            f"Skipped {len(skipped)} file(s) of {split}/ that are not UTF-8 text: {names}",
            file=sys.stderr,
        )
    if repaired:
        print(
            f"Replaced invalid UTF-8 bytes in {repaired} review(s) of {split}/ (U+FFFD)",
            file=sys.stderr,
        )


def _review_id(path):
    head = path.stem.split("_")[0]
    return int(head) if head.isdigit() else -1


def _load_local(path, progress=True):
    path = Path(path).expanduser()
    if not path.exists():
        raise DataNotFoundError(_how_to_provide(f"the path {str(path)!r} does not exist."))
    if path.is_file():
        root = _extract(path, progress=progress)
    else:
        root = _find_root(path)
        if root is None:
            raise DataNotFoundError(
                _how_to_provide(
                    f"{str(path)!r} is not an aclImdb folder (expected train/ and test/ in it)."
                )
            )
    if progress:
        print(f"Reading IMDB reviews from {root}")
    train = _read_split(root, "train", progress)
    test = _read_split(root, "test", progress)
    return train, test, str(root)


IMDB_HOST = "ai.stanford.edu"  # where tensorflow-datasets downloads imdb_reviews from


def _reachable(host, port=80, timeout=3.0):
    import socket

    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _load_tfds():
    import tensorflow_datasets as tfds

    options = {"split": ["train", "test"], "as_supervised": True}
    try:  # already downloaded and prepared: no network needed
        splits = tfds.load("imdb_reviews", download=False, **options)
    except Exception:
        # Fail fast offline instead of waiting through tfds' download retries.
        if not _reachable(IMDB_HOST):
            raise ConnectionError(f"cannot reach {IMDB_HOST} to download imdb_reviews") from None
        splits = tfds.load("imdb_reviews", **options)
    out = []
    for name, ds in zip(("train", "test"), splits, strict=True):
        texts, labels = [], []
        for text, label in tfds.as_numpy(ds):
            texts.append(text.decode("utf-8", errors="replace"))
            labels.append(int(label))
        ids = [f"{name}/{i}" for i in range(len(texts))]
        out.append(Split(texts, np.array(labels, dtype=np.int64), ids))
    return out[0], out[1], "tensorflow_datasets:imdb_reviews"


def _stratified_indices(labels, size, seed):
    """A seeded, stratified choice of ``size`` indices (sorted)."""
    from sklearn.model_selection import train_test_split

    labels = np.asarray(labels)
    if size >= len(labels):
        return np.arange(len(labels))
    chosen, _ = train_test_split(
        np.arange(len(labels)), train_size=size, stratify=labels, random_state=seed
    )
    return np.sort(chosen)


VALIDATION_SPLITS = ("blocks", "random")
BLOCK_SIZE = 100  # consecutive review ids per validation block (a movie has <= 30 reviews)


def _block_indices(ids, labels, size, seed, block_size=BLOCK_SIZE):
    """Seeded choice of ``size`` indices made of blocks of consecutive ids.

    Per class (stratified), the reviews are ordered by their numeric id and
    cut into blocks of ``block_size``; whole blocks are drawn at random until
    the class has its share (the last block drawn is cut short). Returns
    ``None`` when the ids carry no numeric review id (tensorflow-datasets).
    """
    numbers = []
    for review_id in ids:
        head = str(review_id).rsplit("/", 1)[-1].split("_")[0]
        if "_" not in str(review_id) or not head.isdigit():
            return None
        numbers.append(int(head))
    numbers = np.asarray(numbers)
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    chosen = []
    for k, label in enumerate(classes):
        members = np.flatnonzero(labels == label)
        members = members[np.argsort(numbers[members], kind="stable")]
        share = int(round(size * np.mean(labels == label)))
        if k == len(classes) - 1:
            share = size - sum(len(c) for c in chosen)
        blocks = [members[i : i + block_size] for i in range(0, len(members), block_size)]
        picked = []
        for b in rng.permutation(len(blocks)):
            if len(picked) >= share:
                break
            picked.extend(blocks[b][: share - len(picked)])
        chosen.append(np.asarray(picked, dtype=np.int64))
    return np.sort(np.concatenate(chosen))


def load_imdb(
    source=None,
    *,
    validation_size=2500,
    validation_split="blocks",
    seed=1337,
    limit=None,
    progress=True,
):
    """Load IMDB as raw texts with train / validation / test splits.

    Args:
        source: path to an ``aclImdb`` folder (or its parent) or to a
            ``.tar.gz`` of one. ``None`` tries ``$HATT_IMDB``, then
            tensorflow-datasets.
        validation_size: number of reviews carved out of ``train`` for
            validation (stratified, seeded; disjoint from the rest of train).
        validation_split: ``"blocks"`` (default): whole blocks of
            ``BLOCK_SIZE`` consecutive review ids, so that validation and
            train share few movies, as test and train share none;
            ``"random"``: single reviews at random. Sources without review
            ids (tensorflow-datasets) always use ``"random"``.
        seed: seed of the validation split and of ``limit`` subsets.
        limit: if given, every split keeps at most this many reviews, a
            stratified seeded subset (for quick runs and tests).
        progress: show progress bars while extracting and reading.

    Returns:
        An :class:`Imdb` with ``.train``, ``.validation`` and ``.test``
        :class:`Split` objects (``.texts`` list of str, ``.labels`` int64
        NumPy array, 1 = positive) and ``.source``.

    Raises:
        DataNotFoundError: no source works; the message names the three ways
            to provide the data.
        ValueError: ``validation_size`` or ``limit`` is out of range.
    """
    if limit is not None and (not isinstance(limit, int | np.integer) or limit < 2):
        raise ValueError(f"Expected limit to be None or an int >= 2. Received: limit={limit!r}")
    if not isinstance(validation_size, int | np.integer) or validation_size < 0:
        raise ValueError(
            "Expected validation_size to be a non-negative int. "
            f"Received: validation_size={validation_size!r}"
        )

    if validation_split not in VALIDATION_SPLITS:
        raise ValueError(
            f"Expected validation_split to be one of {VALIDATION_SPLITS}. "
            f"Received: validation_split={validation_split!r}"
        )

    if source is not None:
        train, test, origin = _load_local(source, progress)
    elif os.environ.get(ENV_VAR):
        train, test, origin = _load_local(os.environ[ENV_VAR], progress)
    else:
        try:
            train, test, origin = _load_tfds()
        except Exception as error:  # no network, no tfds cache, ...
            raise DataNotFoundError(
                _how_to_provide(
                    f"no source was given, {ENV_VAR} is not set, and tensorflow-datasets "
                    f"failed ({type(error).__name__}: {str(error).splitlines()[0][:200]})."
                )
            ) from error

    if validation_size >= len(train) - 1:
        raise ValueError(
            f"Expected validation_size to be smaller than the train split ({len(train)}). "
            f"Received: validation_size={validation_size}"
        )
    validation_idx = None
    if validation_size == 0:
        validation_idx = np.array([], dtype=np.int64)
    elif validation_split == "blocks":
        validation_idx = _block_indices(train.ids, train.labels, validation_size, seed)
    if validation_idx is None:
        validation_idx = _stratified_indices(train.labels, validation_size, seed)
    rest = np.setdiff1d(np.arange(len(train)), validation_idx)
    validation = train.subset(validation_idx)
    train = train.subset(rest)

    if limit is not None:
        train = train.subset(_stratified_indices(train.labels, limit, seed))
        validation = validation.subset(_stratified_indices(validation.labels, limit, seed))
        test = test.subset(_stratified_indices(test.labels, limit, seed))
    return Imdb(train=train, validation=validation, test=test, source=origin)
