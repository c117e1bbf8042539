"""Does the channel's tokenization hold it back? Exact n-grams under two tokenizations.

The channel (NB-weighted logistic regression over binary 1-3-grams, as
``ngram.init="nblr"``) scores 91.30 % on test where Mesnil et al. (2015) report
91.87 % for the same recipe. Two differences are measured here, on the
training split only (5-fold CV with the folds of ``channel_cv.py``) and on the
validation split (the test split is read only with ``--test``):

- **exact n-grams**: every uni-, bi- and trigram of the training split gets its
  own feature (no vocabulary cap, no hashing), counted by scikit-learn;
- **tokenization**: hatt's (``hatt.data.tokenize``, punctuation dropped) against
  Mesnil et al.'s (lower-cased; ``. " , ( ) ! ? ; :`` split off as tokens of their
  own, everything else kept inside words).

The fit is hatt's own (:func:`hatt.training.fit_nb_logistic`, α = 1).
With ``--test``, each row also fits on all 25,000 labelled reviews (train +
validation, as Mesnil et al. and ``ngram.refit`` do) and scores the test split:
the final figure of a recipe, once C is chosen on CV.

    python -m experiments.archive.channel_tokens [--data PATH] [--seed 1337] [--limit N]
        [--C 0.1 0.3 1.0] [--tokens hatt mesnil] [--test] [--validation-size 2500]
        [--name channel_tokens]

Writes experiments/results/NAME.json and NAME.md.
"""

import argparse
import re
from pathlib import Path

import keras
import numpy as np

import hatt
from experiments.archive.channel_cv import block_folds, command_line, evaluate, write_report
from hatt.data.text import flatten, tokenize

RESULTS = Path(__file__).resolve().parents[1] / "results"  # experiments/results
CHUNK = 1000


def hatt_tokens(texts):
    """hatt's tokens of each review, sentences joined."""
    out = []
    bar = keras.utils.Progbar(len(texts), unit_name="review")
    for start in range(0, len(texts), CHUNK):
        rows = flatten(tokenize(texts[start : start + CHUNK])).to_list()
        out += [[word.decode("utf-8") for word in row] for row in rows]
        bar.add(len(rows))
    return out


def mesnil_tokens(texts):
    """Mesnil et al.'s normalisation: lower case, <br />, punctuation as tokens."""
    out = []
    for text in texts:
        text = text.lower().replace("<br />", " ")
        out.append(re.sub(r'([.",()!?;:])', r" \1 ", text).split())
    return out


TOKENIZERS = {"hatt": hatt_tokens, "mesnil": mesnil_tokens}


def grams(tokens):
    """Every 1-, 2- and 3-gram of a token list."""
    out = list(tokens)
    for n in (2, 3):
        out += [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="aclImdb folder or .tar.gz (else $HATT_IMDB)")
    parser.add_argument("--seed", type=int, default=1337, help="validation split seed")
    parser.add_argument("--limit", type=int, default=None, help="keep at most N reviews a split")
    parser.add_argument("--C", nargs="+", type=float, default=[0.1, 0.3, 1.0], dest="C")
    parser.add_argument("--tokens", nargs="+", choices=sorted(TOKENIZERS), default=list(TOKENIZERS))
    parser.add_argument(
        "--test", action="store_true", help="also fit on train + validation, score test"
    )
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--validation-size", type=int, default=2500)
    parser.add_argument("--name", default="channel_tokens")
    parser.add_argument("--results", default=str(RESULTS))
    args = parser.parse_args(argv)

    imdb = hatt.data.load_imdb(
        args.data, seed=args.seed, limit=args.limit, validation_size=args.validation_size
    )
    labels = np.asarray(imdb.train.labels)
    folds = block_folds(imdb.train.ids, labels, args.folds)
    rows = []
    for name in args.tokens:
        tokenizer = TOKENIZERS[name]
        print(f"Tokenizing ({name})")
        train, held = tokenizer(imdb.train.texts), tokenizer(imdb.validation.texts)
        # fold features come from the whole training split: the same for both tokenizations
        counts, validation_counts = exact_counts(train, held)
        validation = (validation_counts, np.asarray(imdb.validation.labels))
        final = exact_counts(train + held, tokenizer(imdb.test.texts)) if args.test else None
        for c in args.C:
            row = {"tokens": name, "features": counts.shape[1], "C": c}
            row.update(evaluate(counts, labels, folds, *validation, c, alpha=1.0))
            if args.test:
                row["test_accuracy"] = test_accuracy(*final, labels_all(imdb), imdb, c)
            print(row, flush=True)
            rows.append(row)

    report = {
        "command": command_line("channel_tokens"),
        "seed": args.seed,
        "folds": args.folds,
        "rows": rows,
    }
    header = "| tokens | exact 1-3-grams | C | 5-fold CV accuracy (train) | folds | validation |"
    if args.test:
        report["test"] = "fit on train + validation (25,000 reviews), scored on the test split"
        header += " test (fit on train + validation) |"

    def cells(r):
        test = f" {100 * r['test_accuracy']:.2f} % |" if "test_accuracy" in r else ""
        return f"| {r['tokens']} | {r['features']:,} | {r['C']} ", test

    return write_report(report, header, cells, Path(args.results), args.name)


def labels_all(imdb):
    """The labels of train then validation (the order of ``train + held``)."""
    return np.concatenate([np.asarray(imdb.train.labels), np.asarray(imdb.validation.labels)])


def exact_counts(train, other):
    """Binary exact 1-3-grams of ``train`` (their own vocabulary), and of ``other`` over it."""
    from sklearn.feature_extraction.text import CountVectorizer

    vectorizer = CountVectorizer(analyzer=grams, binary=True, dtype=np.float32)
    return vectorizer.fit_transform(train).tocsr(), vectorizer.transform(other).tocsr()


def test_accuracy(counts, test_counts, labels, imdb, c):
    """The fit on ``counts`` (train + validation) at ``C=c``, scored on the test split."""
    from hatt.training import channel_accuracy, fit_nb_logistic

    weights, intercept = fit_nb_logistic(
        counts, labels, binary=True, reduction="sum", C=c, alpha=1.0
    )[:2]
    test_labels = np.asarray(imdb.test.labels)
    return channel_accuracy(test_counts, test_labels, weights, True, "sum", intercept)


if __name__ == "__main__":
    main()
