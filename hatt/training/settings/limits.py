"""The shape of a batch: its layout (packed HAN sentences) and what the machine can hold,
checked before any data is read (issue 33, item 11)."""

import os

from hatt import models
from hatt.data.pipeline import default_sentence_groups

# Floats a review holds at least at once in training: its tokens x the widest layer's
# units, for the forward values and their gradients (a lower bound: real use is higher).
WIDTH_ARGUMENTS = ("embedding_dim", "filters", "units", "word_units", "sentence_units")


def check_batch_memory(config, memory_bytes=None):
    """Refuse a ``batch_size`` whose activations alone exceed the machine's memory.

    A lower bound, so no feasible setting is refused: ``batch_size x tokens a review x
    the widest layer x 4 bytes x 2`` (values and gradients), against the physical
    memory. ``--set batch_size=1000000000`` fails here, before any data is read,
    instead of minutes later inside TensorFlow.
    """
    memory_bytes = memory_bytes or _physical_memory()
    if not memory_bytes:
        return
    tokens = config.sequence_length
    if models.family_spec(config.model).nested:  # sentences of words
        tokens = config.max_sentences * config.max_words
    kwargs = config.model_kwargs or {}
    widths = [kwargs.get(name) for name in WIDTH_ARGUMENTS]
    width = max([w for w in widths if isinstance(w, int) and not isinstance(w, bool)] + [1])
    per_review = tokens * width * 4 * 2
    needed = config.batch_size * per_review
    if needed > memory_bytes:
        largest = max(1, memory_bytes // (4 * per_review))
        suggestion = 1 << (largest.bit_length() - 1)
        raise ValueError(
            f"Expected a batch_size whose activations fit in memory. Received: "
            f"batch_size={config.batch_size}: {tokens} tokens x {width} units a review need "
            f"at least {needed / 2**30:,.1f} GiB, the machine has {memory_bytes / 2**30:.1f} "
            f"GiB. Try --set batch_size={suggestion} or less."
        )


UNLABELED_MEMORY_SHARE = 4  # unlabeled text may take a quarter of the machine's memory


def unlabeled_chars(memory_bytes=None):
    """The characters of unlabeled text a run keeps at most (``None``: unknown memory).

    The texts, then their ids for word2vec and the teacher's batches, stay in memory
    together; a quarter of the machine's memory in characters leaves room for them
    (about 3 million IMDB reviews on 24 GiB). A larger source is read as a stream up
    to it and the run says where it stopped (:func:`hatt.data.unlabeled.summary`).
    """
    memory_bytes = memory_bytes or _physical_memory()
    return memory_bytes // UNLABELED_MEMORY_SHARE if memory_bytes else None


def _physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


# === The batch's layout ===========================================================


def packed(config):
    """Whether the run feeds the packed HAN layout."""
    return models.family_spec(config.model).nested and config.packed


def sentence_groups(config):
    """Widths of the packed sentence groups (the configured ones, or hatt.data's default)."""
    groups = config.sentence_groups or default_sentence_groups(config.max_words)
    return tuple(int(g) for g in groups)
