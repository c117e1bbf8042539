"""Do neighbouring IMDB review ids share a movie? (evidence for the validation split)

IMDB's ``train/`` and ``test/`` hold different movies, but a validation split
drawn at random from ``train/`` shares movies with the rest of ``train/``, so it
rewards memorising movie-specific words. The labeled tarball has no
``urls_*.txt`` (which map reviews to movies), so this script measures it
indirectly: the Jaccard overlap of rare capitalised words (names, titles; seen
in 2–30 reviews) between reviews with consecutive ids, against random pairs. A
ratio far above 1 means ids come grouped by movie, and a validation split of
contiguous id blocks would be close to movie-disjoint.

    python -m experiments.archive.validation_leak [--data PATH]
"""

import argparse
import re
from collections import Counter

import numpy as np

from hatt.data import load_imdb


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--pairs", type=int, default=20000)
    args = parser.parse_args()
    imdb = load_imdb(args.data, validation_size=0, progress=False)
    for label, name in ((1, "pos"), (0, "neg")):
        rows = [
            (int(i.split("/")[-1].split("_")[0]), t)
            for i, t, y in zip(imdb.train.ids, imdb.train.texts, imdb.train.labels, strict=True)
            if y == label
        ]
        rows.sort()
        names = [set(re.findall(r"[A-Z][a-z]{3,}", text)) for _, text in rows]
        counts = Counter(w for words in names for w in words)
        rare = [{w for w in words if 2 <= counts[w] <= 30} for words in names]

        def jaccard(a, b):
            return len(a & b) / max(1, len(a | b))

        adjacent = np.mean([jaccard(rare[i], rare[i + 1]) for i in range(len(rare) - 1)])
        rng = np.random.default_rng(0)
        pairs = rng.integers(0, len(rare), (args.pairs, 2))
        random = np.mean([jaccard(rare[a], rare[b]) for a, b in pairs if a != b])
        print(
            f"train/{name}: rare-name overlap of consecutive ids {adjacent:.4f}, "
            f"random pairs {random:.4f} ({adjacent / random:.0f}x)"
        )


if __name__ == "__main__":
    main()
