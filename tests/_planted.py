"""A planted-signal corpus in the aclImdb layout, big enough for multi-epoch CLI runs.

Label 1 iff a review contains "superb" (else "dreadful"), among random filler
words, in two or three sentences: any model learns it in a few epochs, and
runs can be compared exactly.
"""

from pathlib import Path

import numpy as np


def planted_texts(n, seed):
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for i in range(n):
        label = i % 2
        words = [f"w{rng.integers(40)}" for _ in range(rng.integers(6, 24))]
        words.insert(int(rng.integers(len(words))), "superb" if label else "dreadful")
        cut = sorted(rng.choice(np.arange(1, len(words)), size=2, replace=False))
        sentences = [words[: cut[0]], words[cut[0] : cut[1]], words[cut[1] :]]
        texts.append(" ".join(" ".join(s).capitalize() + "." for s in sentences))
        labels.append(label)
    return texts, labels


def planted_split(n, seed, cue_rate=1.0, lean=None):
    """A :class:`hatt.data.Split` of ``n`` two-sentence reviews of filler words.

    Label 1 iff the review holds "superb" (else "dreadful"). ``cue_rate < 1``
    leaves that word out of some reviews; ``lean`` adds a weaker word, "fine"
    on the label's side with probability ``lean`` (else "poor"), so that no
    single word decides every review.
    """
    from hatt.data import Split

    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for i in range(n):
        label = i % 2
        words = [f"w{rng.integers(30)}" for _ in range(rng.integers(5, 15))]
        if lean is not None:
            word = "fine" if (rng.random() < lean) == bool(label) else "poor"
            words.insert(int(rng.integers(len(words))), word)
        if cue_rate >= 1 or rng.random() < cue_rate:
            words.insert(int(rng.integers(len(words))), "superb" if label else "dreadful")
        texts.append(" ".join(words[:6]) + ". " + " ".join(words[6:]) + ".")
        labels.append(label)
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
