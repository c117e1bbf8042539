"""A planted aclImdb folder and a stand-in for `hatt train`, shared by the harness's tests."""

import json
from pathlib import Path

import numpy as np

RATINGS = (1, 2, 3, 4, 7, 8, 9, 10)


def write_imdb(root, n_train=160, n_test=48, seed=0):
    """``root/aclImdb/{train,test}/{pos,neg}/ID_RATING.txt``, every rating, unique texts."""
    rng = np.random.default_rng(seed)
    root = Path(root) / "aclImdb"
    for split, n in (("train", n_train), ("test", n_test)):
        for i in range(n):
            rating = RATINGS[i % len(RATINGS)] if i % 5 else RATINGS[0]  # unbalanced ratings
            folder = root / split / ("pos" if rating >= 7 else "neg")
            folder.mkdir(parents=True, exist_ok=True)
            cue = "superb" if rating >= 7 else "dreadful"
            filler = " ".join(f"w{k}" for k in rng.integers(0, 30, size=8))
            text = f"{split} review {i} {filler} {cue} stars{rating}. It ends."
            (folder / f"{i}_{rating}.txt").write_text(text, encoding="utf-8")
    return root


def read_table(path):
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


def fake_hatt(calls):
    """A stand-in for the `hatt train` process: writes metrics.json and an export."""

    def run(command, log_path):
        calls.append(command)
        args = dict(zip(command[3::2], command[4::2], strict=False))
        family = command[2]
        run_dir, export_dir = Path(args["--run-dir"]), Path(args["--export-dir"]) / family
        run_dir.mkdir(parents=True, exist_ok=True)
        train_size = len(read_table(args["--data"]))
        (export_dir / "1" / "variables").mkdir(parents=True, exist_ok=True)
        (export_dir / "1" / "saved_model.pb").write_bytes(b"x" * 300)
        (export_dir / "1" / "variables" / "v.data").write_bytes(b"x" * 700)
        (export_dir / "model.keras").write_bytes(b"x" * 123)
        metrics = {
            "test": {"accuracy": 0.5 + train_size / 1000, "macro_f1": 0.4},
            "test_size": len(read_table(args["--test"])),
            "train_size": train_size,
            "validation_size": 0,
            "train_seconds": 1.5,
        }
        (run_dir / "metrics.json").write_text(json.dumps(metrics))

    return run
