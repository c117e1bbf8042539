import os
import tarfile
from pathlib import Path

import pytest

SHARED_TARBALL = (
    Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / ("aclImdb_v1_labeled.tar.gz")
)


@pytest.fixture(scope="session")
def imdb_path():
    """The real IMDB (HATT_IMDB, else ../shared/data); skip with a reason when absent."""
    path = os.environ.get("HATT_IMDB") or (str(SHARED_TARBALL) if SHARED_TARBALL.exists() else "")
    if not path or not Path(path).exists():
        pytest.skip("real IMDB not available: set HATT_IMDB to an aclImdb folder or .tar.gz")
    return path


# A made-up corpus in the aclImdb layout: (split, label, id, rating, text).
TINY_REVIEWS = [
    ("train", "pos", 0, 9, "A wonderful film.<br /><br />I loved it!"),
    ("train", "pos", 1, 8, "Great acting, great story."),
    ("train", "pos", 2, 10, "Best movie of the year"),
    ("train", "pos", 3, 7, "Good fun. Would watch again."),
    ("train", "pos", 10, 9, "Brilliant! Simply brilliant."),
    ("train", "pos", 11, 8, "A gem."),
    ("train", "neg", 0, 1, "Awful. Just awful."),
    ("train", "neg", 1, 2, "Boring plot, bad acting."),
    ("train", "neg", 2, 3, "I want my money back!"),
    ("train", "neg", 3, 4, "Not good at all"),
    ("train", "neg", 10, 1, "Terrible.<br />Worst film ever."),
    ("train", "neg", 11, 2, "Dull."),
    ("test", "pos", 0, 9, "Lovely film."),
    ("test", "pos", 1, 10, "Masterpiece!"),
    ("test", "neg", 0, 1, "Rubbish."),
    ("test", "neg", 1, 2, "Waste of time."),
]


def write_tiny_imdb(root):
    root = Path(root) / "aclImdb"
    for split, label, review_id, rating, text in TINY_REVIEWS:
        folder = root / split / label
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{review_id}_{rating}.txt").write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def tiny_imdb(tmp_path):
    return write_tiny_imdb(tmp_path / "corpus")


@pytest.fixture
def tiny_imdb_tarball(tmp_path):
    root = write_tiny_imdb(tmp_path / "src")
    tarball = tmp_path / "tiny_imdb.tar.gz"
    with tarfile.open(tarball, "w:gz") as archive:
        archive.add(root, arcname="aclImdb")
    return tarball
