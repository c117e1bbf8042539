"""THE planted-signal corpus of the tests: label 1 iff a review holds "superb" (else "dreadful").

With ``cues=`` (:func:`planted_classes`) it has any number of classes, class
``k`` marked by the cue word ``cues[k]``.

Every review is random filler words (``w0``, ``w1``, ...) with the label's
cue word planted once, cut into sentences: any model learns it in a few
epochs, and runs can be compared exactly. :func:`planted_corpus` is the one
generator; :func:`planted_texts`, :func:`planted_split` and
:func:`write_planted_imdb` are fixed settings of it (their outputs are
unchanged from when they were separate generators, so the tests that tuned
thresholds on them keep their data).
"""

from pathlib import Path

import numpy as np


def planted_corpus(
    n,
    seed,
    *,
    filler=40,
    words=(6, 24),
    sentences=3,
    split_at=None,
    capitalize=True,
    html_breaks=False,
    cue_rate=1.0,
    lean=None,
    cues=("dreadful", "superb"),
):
    """``n`` planted reviews and their labels (cycling 0, 1, ..., ``len(cues) - 1``).

    Args:
        n: Number of reviews.
        seed: Seed of the draw.
        filler: Filler words are ``w0`` .. ``w{filler - 1}``.
        words: ``(low, high)``: filler words a review, drawn in ``[low, high)``.
        sentences: Sentences a review: an int, or ``(low, high)`` drawn per
            review in ``[low, high]`` (at most one a word); cut at random
            places.
        split_at: An int instead of random cuts: two sentences, the first
            ``split_at`` words and the rest.
        capitalize: Capitalise each sentence.
        html_breaks: Join the sentences of every third review with
            ``<br /><br />`` (IMDB's paragraph breaks) instead of a space.
        cue_rate: Share of reviews that get the cue word (below 1 some get none).
        lean: If given, also plant a weaker word: ``"fine"`` on the label's
            side with this probability (else ``"poor"``), so that no single
            word decides every review.
        cues: The cue word of each class (label ``k`` gets ``cues[k]``).

    Returns:
        ``(texts, labels)``: a list of str and a list of int.
    """
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for i in range(n):
        label = i % len(cues)
        review = [f"w{rng.integers(filler)}" for _ in range(rng.integers(*words))]
        if lean is not None:
            word = "fine" if (rng.random() < lean) == bool(label) else "poor"
            review.insert(int(rng.integers(len(review))), word)
        if cue_rate >= 1 or rng.random() < cue_rate:
            review.insert(int(rng.integers(len(review))), cues[label])
        parts = _sentences(rng, review, sentences, split_at)
        rendered = [" ".join(p).capitalize() if capitalize else " ".join(p) for p in parts]
        joiner = "<br /><br />" if html_breaks and i % 3 == 0 else " "
        texts.append(joiner.join(f"{sentence}." for sentence in rendered))
        labels.append(label)
    return texts, labels


def _sentences(rng, review, sentences, split_at):
    if split_at is not None:
        return [review[:split_at], review[split_at:]]
    count = (
        sentences if isinstance(sentences, int) else int(rng.integers(*sentences, endpoint=True))
    )
    count = max(1, min(count, len(review)))
    cuts = sorted(rng.choice(np.arange(1, len(review)), size=count - 1, replace=False))
    bounds = [0, *(int(c) for c in cuts), len(review)]
    return [review[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def planted_classes(n, seed, classes=("business", "science", "sports"), **kwargs):
    """``n`` planted documents of ``len(classes)`` classes: ``(texts, class names)``.

    Class ``k`` (documents ``k``, ``k + len(classes)``, ...) holds its own
    name as the cue word; ``kwargs`` go to :func:`planted_corpus`.
    """
    texts, labels = planted_corpus(n, seed, cues=tuple(classes), **kwargs)
    return texts, [classes[label] for label in labels]


def planted_texts(n, seed):
    """Three capitalised sentences of 6-23 filler words (40 of them) and the cue."""
    return planted_corpus(n, seed)


def planted_split(n, seed, cue_rate=1.0, lean=None):
    """A :class:`hatt.data.Split` of ``n`` two-sentence reviews of filler words.

    Label 1 iff the review holds "superb" (else "dreadful"). ``cue_rate < 1``
    leaves that word out of some reviews; ``lean`` adds a weaker word, "fine"
    on the label's side with probability ``lean`` (else "poor"), so that no
    single word decides every review.
    """
    from hatt.data import Split

    texts, labels = planted_corpus(
        n,
        seed,
        filler=30,
        words=(5, 15),
        split_at=6,
        capitalize=False,
        cue_rate=cue_rate,
        lean=lean,
    )
    return Split(texts, np.array(labels))


def write_planted_imdb(root, n_train=600, n_test=200, seed=0):
    """Write ``root/aclImdb/{train,test}/{pos,neg}/ID_RATING.txt``; return the aclImdb path."""
    root = Path(root) / "aclImdb"
    for split, n, offset in (("train", n_train, 0), ("test", n_test, 1)):
        texts, labels = planted_texts(n, seed + offset)
        for i, (text, label) in enumerate(zip(texts, labels, strict=True)):
            folder = root / split / ("pos" if label else "neg")
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{i}_{8 if label else 2}.txt").write_text(text, encoding="utf-8")
    return root
