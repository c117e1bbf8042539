"""Random config dicts reach assemble_config: a TrainConfig or a clear ValueError, nothing else.

Issue 33's property tests: the keys are drawn from the real ones (top level,
``ngram``, ``model_kwargs``) and misspellings of them, the values from every
JSON kind, so each check of the door (types, ranges, choices, unknown keys)
is reached.
"""

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from hatt import models
from hatt.classifier import TextClassifier
from hatt.training.settings import config as config_lib
from hatt.training.settings.config import NgramSettings, TrainConfig, assemble_config

FIELDS = [f.name for f in dataclasses.fields(TrainConfig) if f.name not in ("model", "prepared")]
NGRAM_KEYS = [f.name for f in dataclasses.fields(NgramSettings)]
MODEL_KEYS = ["embedding_dim", "filters", "dropout", "kernel_sizes", "attention_units", "pooling"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
values = st.one_of(scalars, st.lists(scalars, max_size=3))


def _keys(known):
    typo = st.sampled_from(known).map(lambda k: k[:-1] + "x")
    return st.one_of(st.sampled_from(known), typo)


config_dicts = st.fixed_dictionaries(
    {},
    optional={
        "ngram": st.one_of(st.none(), st.dictionaries(_keys(NGRAM_KEYS), values, max_size=3)),
        "model_kwargs": st.dictionaries(_keys(MODEL_KEYS), values, max_size=3),
    },
).flatmap(
    lambda sections: st.dictionaries(_keys(FIELDS), values, max_size=4).map(
        lambda top: {**top, **sections}
    )
)


@settings(max_examples=80)
@given(family=st.sampled_from(["cnn", "rnn", "han", "transformer"]), overrides=config_dicts)
def test_random_config_dicts_give_a_config_or_a_clear_error(family, overrides):
    overrides.pop("data", None)  # a path: read only when training starts
    try:
        config = assemble_config(family, preset=None, overrides=overrides)
    except ValueError as error:
        assert str(error) and "Traceback" not in str(error)
    else:
        assert isinstance(config, TrainConfig)
        assert config.learning_rate > 0 and config.epochs >= 1 and config.batch_size >= 1
        assert config.monitor in config_lib.MONITORS
        assert TrainConfig.from_dict(config.to_dict()) == config  # what config.json holds


@settings(max_examples=40)
@given(
    pairs=st.lists(
        st.tuples(_keys(FIELDS + ["ngram.buckets", "model_kwargs.filters"]), st.text(max_size=10)),
        max_size=3,
    )
)
def test_random_set_strings_give_a_config_or_a_clear_error(pairs):
    try:
        assemble_config("cnn", preset=None, overrides=[f"{k}={v}" for k, v in pairs if k != "data"])
    except ValueError as error:
        assert str(error)


BUILDER_KEYS = sorted({a for f in models.FAMILIES for a in models.builder_arguments(f)})


@settings(max_examples=60, deadline=None)
@given(
    family=st.sampled_from(models.FAMILIES),
    preset=st.sampled_from(["default", None]),
    settings_=st.dictionaries(_keys(FIELDS + BUILDER_KEYS), values, max_size=4),
)
def test_random_python_settings_give_a_classifier_or_a_clear_error(family, preset, settings_):
    """The Python face takes the CLI's checks (issue 63): TextClassifier(**settings) builds
    a checked config or says what is wrong, never a TypeError from deep inside."""
    settings_ = {
        k: v for k, v in settings_.items() if k not in ("data", "test_data", "init", "preset")
    }
    try:
        clf = TextClassifier(family, preset=preset, **settings_)
    except ValueError as error:
        assert str(error) and "Traceback" not in str(error)
    else:
        config = clf.config
        assert TrainConfig.from_dict(config.to_dict()) == config
        assert 0 <= config.seed < 2**32 and config.learning_rate > 0
        for key, value in config.model_kwargs.items():
            assert not (isinstance(value, float) and value != value), key  # never NaN
