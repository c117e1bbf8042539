"""Issue 33, items 1, 11 (batch_size) and 12: every setting is checked at the door.

Each case went through on main: a negative learning rate trained, ``monitor=bogus``
turned early stopping off, a misspelt ``ngram`` key was dropped, ``--epochs -1``
blamed ``warmup_epochs`` and ``batch_size=1e9`` failed only after the data was read.
"""

import pytest

from hatt.training import config as config_lib
from hatt.training.config import TrainConfig, assemble_config, check_batch_memory


def _refused(overrides, *fragments, family="cnn", **values):
    with pytest.raises(ValueError) as caught:
        assemble_config(family, preset=None, overrides=overrides, **values)
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


@pytest.mark.parametrize("value", ["-1", "0", "-1e-9"])
def test_a_learning_rate_that_is_not_positive_is_refused(value):
    _refused([f"learning_rate={value}"], "learning_rate", "> 0")


def test_a_monitor_outside_the_history_keys_is_refused():
    message = _refused(["monitor=bogus"], "monitor", "'bogus'")
    for known in config_lib.MONITORS:
        assert known in message


def test_a_known_monitor_is_kept():
    assert assemble_config("cnn", preset=None, overrides=["monitor=val_loss"]).monitor == "val_loss"


@pytest.mark.parametrize(
    ("overrides", "typed", "meant"),
    [
        ({"ngram": {"bukets": 10}}, "['bukets']", "ngram.buckets"),
        ({"learning_rat": 0.1}, "['learning_rat']", "learning_rate"),
        ({"model_kwargs": {"filtres": 10}}, "['filtres']", "model_kwargs.filters"),
    ],
)
def test_a_misspelt_key_at_any_level_is_refused_with_a_suggestion(overrides, typed, meant):
    _refused(overrides, typed, f"Did you mean {meant}?")


def test_a_misspelt_ngram_key_is_refused_in_the_config_too():
    with pytest.raises(ValueError, match=r"Did you mean ngram.buckets\?"):
        TrainConfig(ngram={"bukets": 10})


@pytest.mark.parametrize(
    ("override", "name"),
    [
        ("model_kwargs.dropout=1.0", "model_kwargs.dropout"),
        ("model_kwargs.dropout=-0.1", "model_kwargs.dropout"),
        ("model_kwargs.filters=0", "model_kwargs.filters"),
        ('model_kwargs.filters="many"', "model_kwargs.filters"),
        ("sequence_length=0", "sequence_length"),
        ("min_count=0", "min_count"),
        ("max_tokens=1", "max_tokens"),
        ("clr_step_epochs=0", "clr_step_epochs"),
        ("clr_max_momentum=1.5", "clr_max_momentum"),
        ("truncation=middle", "truncation"),
        ("validation_split=sideways", "validation_split"),
    ],
)
def test_values_out_of_range_are_refused_naming_the_key(override, name):
    _refused([override], f"{name}=")


def test_clr_bounds_in_the_wrong_order_are_refused():
    _refused(
        ["clr_min_learning_rate=0.1", "clr_max_learning_rate=0.01"],
        "clr_min_learning_rate <= clr_max_learning_rate",
    )


def test_negative_epochs_blame_epochs_not_warmup_epochs():
    message = _refused([], "epochs=-1", epochs=-1)
    assert "warmup_epochs" not in message


def test_an_absurd_batch_size_is_refused_before_any_data_with_a_suggestion():
    # a data path that does not exist: the refusal must come before it is read
    message = _refused(
        ["batch_size=1000000000"],
        "batch_size=1000000000",
        "--set batch_size=",
        data="/nonexistent.csv",
    )
    suggested = int(message.rsplit("--set batch_size=", 1)[1].rstrip("."))
    config = TrainConfig(model="cnn")
    memory = config_lib._machine_memory()
    assert 1 <= suggested and suggested * config_lib.example_bytes(config) <= memory


def test_the_batch_check_follows_the_estimate_and_the_memory():
    config = TrainConfig(model="cnn", batch_size=64)
    per_example = config_lib.example_bytes(config)
    check_batch_memory(config, memory=64 * per_example)  # fits exactly
    with pytest.raises(ValueError, match=r"--set batch_size=16\."):
        check_batch_memory(config, memory=64 * per_example - 1)  # half: 31 → 16
    han = TrainConfig(model="han", max_sentences=10, max_words=20)
    assert config_lib.example_bytes(han) == 4 * 2 * 10 * 20 * 100  # HAN's embedding_dim 100


def test_ordinary_presets_still_assemble():
    for family in ("cnn", "rnn", "han", "transformer"):
        assert assemble_config(family).model == family


def test_a_malformed_scaled_record_is_a_clear_error():
    # found by tests/properties/test_config_properties.py: an AttributeError on main
    for scaled, fragment in [(True, "scaled to be a dict"), ({"ngram.buckets": 5}, "[from, to]")]:
        with pytest.raises(ValueError, match="scaled") as caught:
            TrainConfig.from_dict({"model": "cnn", "scaled": scaled})
        assert fragment in str(caught.value)
