"""tensorflow-datasets corpora by name (``tfds:NAME``); offline, a clear error instead of a hang."""

import numpy as np

from hatt.data.corpus import RawCorpus, Split, label_name
from hatt.data.readers.read_log import kept_text

TFDS_PREFIX = "tfds:"
TFDS_HOST = "storage.googleapis.com"  # tensorflow-datasets' bucket: the offline probe


def _reachable(host, port=80, timeout=3.0):
    import socket

    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _tfds_builder(tfds, name):
    try:
        return tfds.builder(name)
    except tfds.core.DatasetNotFoundError:
        raise ValueError(
            f"Expected tfds:NAME to name a tensorflow-datasets data set. Received: {name!r} "
            "(tfds.list_builders() lists the names)."
        ) from None


def _tfds_splits(tfds, name, host, port):
    """``{split: dataset}`` of ``(text, label)`` pairs; downloads only with a network."""
    try:  # already downloaded and prepared: no network needed
        return tfds.load(name, as_supervised=True, download=False)
    except Exception:
        # Fail fast offline instead of waiting through tfds' download retries.
        if not _reachable(host, port):
            raise ConnectionError(f"cannot reach {host} to download {name}") from None
        return tfds.load(name, as_supervised=True)


def tfds_available(name, *, host=TFDS_HOST, port=443):
    """Whether :func:`read_tfds` can read ``name`` without reading it: tensorflow-datasets
    is installed and has it prepared, or can reach ``host`` to download it."""
    try:
        import tensorflow_datasets as tfds
    except ImportError:
        return False
    try:
        if _tfds_builder(tfds, name).is_prepared():
            return True
    except Exception:  # an unknown name, a broken cache: not readable without a download
        pass
    return _reachable(host, port)


def _tfds_class_names(tfds, info):
    keys = info.supervised_keys
    feature = info.features[keys[1]] if keys else None
    if isinstance(feature, tfds.features.ClassLabel):
        return tuple(feature.names)
    return None


def _tfds_split(tfds, dataset, split, order, log):
    texts, labels, ids = [], [], []
    for i, (text, label) in enumerate(tfds.as_numpy(dataset)):
        where = f"{split}/{i}"
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="surrogateescape")
        text = kept_text(str(text), where, log)
        if text is None:
            continue
        texts.append(text)
        labels.append(order[int(label)] if order else label_name(label))
        ids.append(where)
    return Split(texts, np.array(labels, dtype=object), ids)


def read_tfds(name, log, *, host=TFDS_HOST, port=443):
    """A tensorflow-datasets data set's train and test splits (test ``None`` when it has none).

    Class names come from the label's ``ClassLabel`` (in its order) when it
    has one. Without a prepared copy and without a network this fails within
    seconds (``ConnectionError``), not after tfds' download retries.
    """
    import tensorflow_datasets as tfds

    builder = _tfds_builder(tfds, name)
    splits = _tfds_splits(tfds, name, host, port)
    if "train" not in splits:
        raise ValueError(
            f"Expected tfds:{name} to have a train split. Received splits: {sorted(splits)}"
        )
    order = _tfds_class_names(tfds, builder.info)
    train = _tfds_split(tfds, splits["train"], "train", order, log)
    test = _tfds_split(tfds, splits["test"], "test", order, log) if "test" in splits else None
    return RawCorpus(train, test, f"tensorflow_datasets:{name}", order)
