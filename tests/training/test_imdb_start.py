"""``init="imdb"`` (issue 61, item 2): hatt's IMDB start, built once, cached, reused.

IMDB is a planted corpus in IMDB's layout (``tests._planted.write_planted_imdb``), found
through ``$HATT_IMDB``; the cache is the test's own ``$HATT_CACHE``. The start's recipe
is the family's preset over a full IMDB run; here its settings are made tiny through
the one seam that builds them (``_start_config``), and everything else runs as a user's
``TextClassifier(FAMILY, init="imdb").fit(...)`` runs it: ONE module-scoped pair of
runs (the first builds the start, the second reuses it) serves the end-to-end checks.
"""

import contextlib
import io
import json
import types

import pytest

import hatt
from hatt.data import DataNotFoundError
from hatt.data import imdb as imdb_data
from hatt.training import assemble_config
from hatt.training.starts import imdb as imdb_start
from hatt.training.starts import transfer
from tests._planted import planted_split, write_planted_imdb
from tests.conftest import TINY_KWARGS

TINY = {
    "max_tokens": 200,
    "min_count": 1,
    "sequence_length": 30,
    "batch_size": 16,
    "learning_rate": 0.02,
    "epochs": 1,
    "patience": 1,
    "word_vectors": None,
    "ngram": {"buckets": 256},
    "model_kwargs": {k: TINY_KWARGS["rnn"][k] for k in ("embedding_dim", "units")},
}


def _tiny_start_config(family, settings):
    """The start's settings as the module builds them, at the size of a test."""
    return assemble_config(family, preset=None, overrides={**TINY, **settings})


def _other_task():
    """A user's corpus: planted reviews with other names for the classes."""
    split = planted_split(80, 7)
    return split.texts, ["bad" if label == 0 else "good" for label in split.labels]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The first user run (builds the start) and the second (reuses it), with what each
    printed and the start's files as the first run left them."""
    root = tmp_path_factory.mktemp("imdb_start")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(imdb_data.ENV_VAR, str(write_planted_imdb(root / "imdb", 120, 40)))
        patch.setenv("HATT_CACHE", str(root / "cache"))
        patch.setattr(imdb_start, "_start_config", _tiny_start_config)
        printed = []
        for name in ("first", "second"):
            clf = hatt.TextClassifier("rnn", preset=None, init="imdb", **TINY)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                clf.fit(*_other_task(), run_dir=root / name, verbose=2)
            printed.append(out.getvalue())
            if name == "first":
                folder = imdb_start.existing_start("rnn")
                first_metrics = (folder / "metrics.json").stat().st_mtime_ns
        return types.SimpleNamespace(
            root=root,
            folder=folder,
            printed=printed,
            first_metrics=first_metrics,
        )


def test_the_first_run_builds_the_start_in_the_cache_and_says_so_up_front(built):
    assert built.folder == built.root / "cache" / "starts" / "imdb-rnn-labeled-v1"
    config = json.loads((built.folder / "config.json").read_text())
    assert config["model"] == "rnn" and config["init"] is None  # IMDB's own run
    metrics = json.loads((built.folder / "metrics.json").read_text())
    assert metrics["class_names"] == ["negative", "positive"]  # IMDB's classes, its test split
    assert metrics["test_size"] == 40
    before, after = built.printed[0].split("Reading IMDB reviews", 1)
    assert "Building hatt's IMDB start for rnn once" in before
    assert str(built.folder) in before and "reused by every later run" in before
    assert "hatt's IMDB start for rnn is built in" in after


def test_the_user_run_starts_from_it_and_records_init_imdb(built):
    for run_dir in (built.root / "first", built.root / "second"):
        info = json.loads((run_dir / "init.json").read_text())
        assert info["source"] == str(built.folder)
        assert {"embedding", "encoder_0", "word_attention"} <= set(info["copied"])
        assert info["head"].startswith("other classes")  # bad/good against negative/positive
        assert json.loads((run_dir / "config.json").read_text())["init"] == "imdb"


def test_the_second_run_reuses_the_cached_start(built):
    assert "Building" not in built.printed[1]
    assert f"hatt's IMDB start: {built.folder}" in built.printed[1]
    assert (built.folder / "metrics.json").stat().st_mtime_ns == built.first_metrics


def test_without_imdb_the_run_is_refused_before_anything_is_built(tmp_path, monkeypatch):
    monkeypatch.delenv(imdb_data.ENV_VAR, raising=False)
    monkeypatch.setenv("HATT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(imdb_data, "tfds_available", lambda *a, **k: False)
    clf = hatt.TextClassifier("rnn", preset=None, init="imdb", **TINY)
    with pytest.raises(DataNotFoundError) as caught:
        clf.fit(*_other_task(), run_dir=tmp_path / "run", verbose=0)
    message = str(caught.value)
    assert "init='imdb' builds hatt's IMDB start once" in message
    assert imdb_data.ENV_VAR in message and "--init PATH" in message
    assert not (tmp_path / "cache" / "starts").exists() and not (tmp_path / "run").exists()


def test_a_start_never_built_is_refused_by_name(tmp_path, monkeypatch):
    monkeypatch.setenv("HATT_CACHE", str(tmp_path))
    with pytest.raises(ValueError, match="Expected hatt's IMDB start for han in .*builds it"):
        transfer.load_source("imdb", "han")


def test_the_recipe_takes_the_unlabeled_reviews_only_beside_imdb_and_with_a_word_encoder(
    tmp_path, monkeypatch
):
    imdb = write_planted_imdb(tmp_path, 4, 2)
    monkeypatch.setenv(imdb_data.ENV_VAR, str(imdb))
    assert imdb_start.recipe("han", True) == ("labeled", {})
    (imdb / "train" / "unsup").mkdir()
    name, settings = imdb_start.recipe("han", True)
    assert name == "unlabeled" and settings["unlabeled"] == "imdb:unsup"
    assert settings["lm_epochs"] > 0
    assert imdb_start.recipe("cnn", False) == ("labeled", {})  # no word encoder to pretrain
    assert imdb_start.start_dir("han", name).name == "imdb-han-unlabeled-v1"
    assert "language model" in imdb_start.plan("han", name, settings)
    assert "(7.6 minutes on two cores when measured)" in imdb_start.plan("cnn", "labeled", {})
    assert "81.8 minutes" in imdb_start.plan("han", "unlabeled", settings)  # the build's own
    assert "longer than the 12.9 minutes" in imdb_start.plan("rnn", "unlabeled", settings)


def test_locate_names_the_source_without_reading_it(tmp_path, monkeypatch):
    monkeypatch.delenv(imdb_data.ENV_VAR, raising=False)
    imdb = write_planted_imdb(tmp_path, 2, 2)
    assert imdb_data.locate(imdb) == imdb
    monkeypatch.setenv(imdb_data.ENV_VAR, str(imdb.parent))
    assert imdb_data.locate() == imdb.parent
    with pytest.raises(DataNotFoundError, match="does not exist"):
        imdb_data.locate(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataNotFoundError, match="not an aclImdb folder"):
        imdb_data.locate(tmp_path / "empty")
    monkeypatch.delenv(imdb_data.ENV_VAR)
    monkeypatch.setattr(imdb_data, "tfds_available", lambda *a, **k: True)
    assert imdb_data.locate() == imdb_data.TFDS_IMDB
    monkeypatch.setattr(imdb_data, "tfds_available", lambda *a, **k: False)
    with pytest.raises(DataNotFoundError, match="HATT_IMDB is not set"):
        imdb_data.locate()
