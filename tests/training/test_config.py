"""hatt.training.settings.config: the ngram section, legacy translation, presets, strict --set, checks."""

import json
import re

import pytest

from hatt import layers, training
from hatt.training.run import loop
from hatt.training.settings import config as config_lib

# A config.json written before the ngram section existed (as in a run directory of
# `hatt train cnn --config experiments/configs/cnn.json`).
LEGACY = {
    "model": "cnn",
    "model_kwargs": {
        "embedding_dim": 128,
        "kernel_sizes": [3, 4, 5],
        "filters": 100,
        "dropout": 0.5,
        "ngram_buckets": 4194304,
        "ngram": 3,
        "ngram_binary": True,
        "ngram_reduction": "sum",
    },
    "seed": 1337,
    "max_tokens": 30000,
    "min_count": 2,
    "sequence_length": 800,
    "batch_size": 32,
    "optimizer": "adam",
    "learning_rate": 0.001,
    "epochs": 5,
    "patience": 2,
    "monitor": "val_loss",
    "ngram_init": "nblr",
    "ngram_init_scale": 1.0,
    "ngram_alpha": 1.0,
    "ngram_C": [0.01, 0.03, 0.1, 0.3],
    "ngram_trainable": True,
    "ngram_fit": "separate",
    "ngram_min_df": 1,
}


def test_legacy_flat_keys_become_the_ngram_section():
    config = training.TrainConfig.from_dict(LEGACY)
    assert config.model_kwargs == {
        "embedding_dim": 128,
        "kernel_sizes": [3, 4, 5],
        "filters": 100,
        "dropout": 0.5,
    }
    section = config.to_dict()["ngram"]
    assert section["buckets"] == 4194304 and section["order"] == 3
    assert section["binary"] is True and section["reduction"] == "sum"
    assert section["init"] == "nblr" and section["fit"] == "separate"
    assert section["C"] == [0.01, 0.03, 0.1, 0.3]
    # the old config is Kim's CNN preset (the CNN's default before the one-hot CNN), field for
    # field, but for the channel's fit, which the preset changed since (issue 15)
    kim = training.assemble_config("cnn", preset="cnn_kim").to_dict()
    refit = {"reduction": "sqrt", "alpha": 2.0, "C": [100.0, 300.0], "refit": True}
    assert {k: kim["ngram"][k] for k in refit} == refit
    old = {**config.to_dict(), "preset": "cnn_kim", "scale": kim["scale"]}  # scale: preset keys
    assert {**old, "ngram": {**old["ngram"], **refit}} == kim
    # written and read back in the new form
    again = training.TrainConfig.from_dict(json.loads(json.dumps(config.to_dict())))
    assert again == config


def test_legacy_config_without_buckets_has_no_channel():
    values = {k: v for k, v in LEGACY.items() if k != "model_kwargs"}
    values["model_kwargs"] = {"filters": 8}
    assert training.TrainConfig.from_dict(values).ngram is None
    values["model_kwargs"] = {"filters": 8, "ngram_buckets": 0}
    assert training.TrainConfig.from_dict(values).ngram is None
    # model_kwargs.ngram_* passed to the constructor still work
    config = training.TrainConfig(model_kwargs={"filters": 8, "ngram_buckets": 64})
    assert config.model_kwargs == {"filters": 8} and config.ngram.buckets == 64


def test_an_old_run_directory_config_loads(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LEGACY))
    config = training.TrainConfig.from_dict(json.loads((tmp_path / "config.json").read_text()))
    assert config.ngram.fit == "separate" and config.preset is None


def test_a_run_written_with_the_removed_pretrain_settings_loads_as_without_them(tmp_path):
    # session 20 removed pretrain / pretrain_epochs / pretrain_output_words: nothing read them
    today = training.assemble_config("han").to_dict()
    old = {**today, "pretrain": None, "pretrain_epochs": 1, "pretrain_output_words": 2048}
    assert training.TrainConfig.from_dict(old, saved=True).to_dict() == today
    # asked for today they are unknown keys, not silently ignored
    path = tmp_path / "new.json"
    path.write_text(json.dumps({"pretrain_epochs": 3}))
    with pytest.raises(ValueError, match="pretrain_epochs"):
        training.assemble_config("han", config_file=path)


@pytest.mark.parametrize(
    "documents, folds", [(900, 0), (9_999, 0), (10_000, "auto"), (None, "auto")]
)
def test_a_run_saved_before_ngram_folds_reads_back_the_rule_it_trained_under(documents, folds):
    # ngram.folds came after runs that chose the channel's grid on the validation split;
    # below CV_DOCUMENTS "auto" now chooses by folds, so such a run reads back 0
    saved = training.assemble_config("han").to_dict()
    del saved["ngram"]["folds"]
    saved["scaled"] = None if documents is None else {"train_documents": documents}
    config = training.TrainConfig.from_dict(saved, saved=True)
    assert config.ngram.folds == folds
    assert config.ngram.folds_for([0, 1] * 450) == (0 if folds == 0 else 5)
    today = training.assemble_config("han").to_dict()
    assert training.TrainConfig.from_dict(today, saved=True).ngram.folds == "auto"  # written


def test_a_legacy_config_file_lays_over_the_preset(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"ngram_C": 0.1, "model_kwargs": {"ngram_binary": False}}))
    config = training.assemble_config("cnn", config_file=path)
    assert config.ngram.C == 0.1 and config.ngram.binary is False
    assert config.ngram.buckets == 4194304  # the rest of the preset's section stays


@pytest.mark.parametrize("name", training.PRESETS)
def test_presets_are_valid_configs_of_their_family(name):
    values = training.load_preset(name)
    config = training.TrainConfig.from_dict(values)
    family = name.split("_")[0]  # a family's own preset, or a variant: FAMILY_VARIANT
    assert config.model == family and config.ngram is not None
    assembled = training.assemble_config(family, preset=name)
    assert assembled.preset == name and assembled.model_kwargs == values["model_kwargs"]
    assert set(config_lib.models.FAMILIES) <= set(training.PRESETS)
    if name == family:  # `hatt train FAMILY` starts from it
        assert training.assemble_config(family).preset == name


def test_preset_none_and_named_presets():
    bare = training.assemble_config("cnn", preset=None)
    assert bare.preset is None and bare.ngram is None and bare.model_kwargs == {}
    assert training.assemble_config("cnn", preset="none") == bare
    with pytest.raises(ValueError, match="preset for cnn"):
        training.assemble_config("cnn", preset="han")
    with pytest.raises(ValueError, match="Expected preset to be one of"):
        training.assemble_config("cnn", preset="bogus")
    # layers: preset, then --set, then the command line's own options
    config = training.assemble_config(
        "rnn", overrides=["epochs=2", "ngram.C=0.1", "model_kwargs.cell=lstm"], epochs=3
    )
    assert config.epochs == 3 and config.ngram.C == 0.1 and config.model_kwargs["cell"] == "lstm"
    assert config.model_kwargs["units"] == 64  # from the preset
    assert training.assemble_config("cnn", overrides=["ngram=null"]).ngram is None


def test_overrides_and_config_validation():
    overrides = training.parse_overrides(["epochs=3", "model_kwargs.units=32", "data=/x y"])
    assert overrides == {"epochs": 3, "model_kwargs": {"units": 32}, "data": "/x y"}
    with pytest.raises(ValueError, match="key=value"):
        training.parse_overrides(["epochs"])
    with pytest.raises(ValueError, match="Unknown configuration keys"):
        training.TrainConfig.from_dict({"model": "cnn", "epoch": 3})
    with pytest.raises(ValueError, match="model"):
        training.TrainConfig(model="bert")
    with pytest.raises(ValueError, match="optimizer"):
        training.TrainConfig(optimizer="lion")


def test_set_values_must_be_json_except_words_for_text_settings():
    assert training.parse_overrides(["optimizer=clr", "ngram.init=nb"]) == {
        "optimizer": "clr",
        "ngram": {"init": "nb"},
    }
    assert training.parse_overrides(["model_kwargs.cell=lstm"]) == {
        "model_kwargs": {"cell": "lstm"}
    }
    with pytest.raises(ValueError, match=r"learning_rate.*a float.*'1e-3x'"):
        training.parse_overrides(["learning_rate=1e-3x"])
    with pytest.raises(ValueError, match="ngram.C.*a float or a list"):
        training.parse_overrides(["ngram.C=big"])
    with pytest.raises(ValueError, match="epochs"):
        training.parse_overrides(["epochs=three"])
    # a builder argument is described by its default's kind (it said "a dict")
    with pytest.raises(ValueError, match=r"model_kwargs.filters=VALUE to be an int written as"):
        training.parse_overrides(["model_kwargs.filters=abc"])
    with pytest.raises(ValueError, match=r"model_kwargs.dropout=VALUE to be a float written as"):
        training.parse_overrides(["model_kwargs.dropout=high"])


@pytest.mark.parametrize(
    "values,match",
    [
        ({"epochs": "3"}, "Expected epochs to be an int. Received: epochs='3'"),
        ({"batch_size": 3.5}, "batch_size to be an int"),
        ({"learning_rate": "fast"}, "learning_rate to be a float"),
        ({"learning_rate": True}, "learning_rate to be a float"),
        ({"packed": "yes"}, "packed to be a bool"),
        ({"sentence_groups": "16"}, "sentence_groups to be a list or None"),
        ({"limit": 0}, "limit to be an int >= 2"),
        ({"model_kwargs": []}, "model_kwargs to be a dict"),
        ({"ngram": {"buckets": "many"}}, "ngram.buckets to be an int"),
        ({"ngram": {"C": [0.1, -1]}}, "ngram.C"),
        (
            {"ngram": {"bucket": 8}},
            r"Unknown ngram settings: 'bucket' \(did you mean 'buckets'\?\)",
        ),
    ],
)
def test_every_field_is_type_checked(values, match):
    with pytest.raises(ValueError, match=match):
        training.TrainConfig.from_dict({"model": "cnn", **values})


def test_unknown_model_kwargs_name_the_family_and_the_known_ones():
    with pytest.raises(
        ValueError,
        match=r"Unknown model_kwargs for cnn: 'filterz' \(did you mean 'filters'\?\). Known: ",
    ):
        training.assemble_config("cnn", overrides=["model_kwargs.filterz=3"])
    with pytest.raises(ValueError, match="word_units"):
        training.TrainConfig(model="rnn", model_kwargs={"word_units": 3})


@pytest.mark.parametrize(
    "reduction, grid", [("sum", [0.01, 0.03, 0.1, 0.3]), ("sqrt", [30.0, 100.0, 300.0, 1000.0])]
)
def test_the_default_grid_of_C_follows_the_reduction_and_is_written_out(reduction, grid):
    config = training.assemble_config(
        "cnn", preset=None, overrides=[f"ngram.reduction={reduction}", "ngram.init=nblr"]
    )
    assert config.ngram.C == grid
    assert training.TrainConfig.from_dict(config.to_dict()).to_dict()["ngram"]["C"] == grid
    given = training.assemble_config(
        "cnn", preset=None, overrides=[f"ngram.reduction={reduction}", "ngram.C=0.5"]
    )
    assert given.ngram.C == 0.5  # a given C is kept whatever the reduction


@pytest.mark.parametrize("value", ["5", "[1]", '"trigram"'])
@pytest.mark.parametrize("section", ["ngram", "model_kwargs"])
def test_a_section_of_the_wrong_shape_is_a_clear_error_from_every_layer(section, value, tmp_path):
    # issue 63: these ended in a TypeError / AttributeError while the layers were merged
    expected = rf"Expected {section} to be an object of settings.*Received: {section}="
    with pytest.raises(ValueError, match=expected + r".*") as caught:
        training.assemble_config("cnn", overrides=[f"{section}={value}"])
    assert "--set" in str(caught.value)
    path = tmp_path / "config.json"
    path.write_text(f'{{"{section}": {value}}}')
    with pytest.raises(ValueError, match=r"\(--config; "):
        training.assemble_config("cnn", config_file=path)
    with pytest.raises(ValueError, match=r"\(the settings; "):
        training.assemble_config("cnn", overrides={section: json.loads(value)})
    assert training.assemble_config("cnn", overrides=["ngram=null"]).ngram is None


def test_nblr_with_the_mean_reduction_needs_its_own_C():
    with pytest.raises(ValueError, match="reduction='mean' needs ngram.C"):
        training.assemble_config(
            "cnn", preset=None, overrides=["ngram.reduction=mean", "ngram.init=nblr"]
        )
    config = training.assemble_config(
        "cnn", preset=None, overrides=["ngram.reduction=mean", "ngram.init=nblr", "ngram.C=1e4"]
    )
    assert config.ngram.C == 1e4


@pytest.mark.parametrize(
    "overrides,message",
    [
        (
            {"learning_rate": -1.0},
            r"Expected learning_rate to be a number > 0. Received: learning_rate=-1.0",
        ),
        ({"learning_rate": 0.0}, "learning_rate to be a number > 0"),
        # issue 63: infinity, seeds NumPy and Keras cannot take, builder values at the door
        ({"learning_rate": float("inf")}, r"learning_rate to be a finite number.*=inf"),
        ({"seed": -1}, r"Expected seed to be an int from 0 to 4294967295.*seed=-1"),
        ({"seed": 2**70}, r"seed to be an int from 0 to 4294967295.*=1180591620717411303424"),
        # issue 63, second pass: huge values that hung or exhausted memory before training
        ({"epochs": 10**20}, r"Expected epochs to be at most 100,000"),
        ({"model_kwargs": {"kernel_sizes": [3, 100000]}}, r"kernel_sizes to be at most sequence"),
        ({"ngram": {"order": 1000}}, r"Expected ngram.order to be at most 8"),
        ({"ngram": {"buckets": 10**11}}, r"Expected ngram.buckets to be at most 134,217,728"),
        ({"max_tokens": -1}, r"Expected max_tokens to be an int >= 1"),
        ({"sequence_length": 0}, r"Expected sequence_length to be an int >= 1"),
        ({"min_count": -5}, r"Expected min_count to be an int >= 1"),
        (
            {"model_kwargs": {"filters": 0}},
            r"Expected model_kwargs.filters to be a positive int. Received: model_kwargs.filters=0",
        ),
        ({"monitor": "bogus"}, r"Expected monitor to be one of \('val_loss', 'val_accuracy'\)"),
        ({"epochs": -1}, r"Expected epochs to be an int >= 1. Received: epochs=-1"),
        ({"bach_size": 3}, r"'bach_size' \(did you mean 'batch_size'\?\)"),
    ],
)
def test_silent_wrong_settings_are_refused_at_the_door(overrides, message):
    """Issue 33, item 1: checked before any data is read, naming the setting."""
    with pytest.raises(ValueError, match=message):
        training.assemble_config("cnn", preset="cnn", overrides=overrides)


def test_attention_temperature_of_infinity_is_refused_when_settings_are_assembled():
    # issue 63: attention_temperature=Infinity trained (a uniform attention) without a word
    for overrides in (
        {"model_kwargs": {"attention_temperature": float("inf")}},
        ["model_kwargs.attention_temperature=Infinity"],
    ):
        with pytest.raises(ValueError, match=r"attention_temperature to be a finite number > 0"):
            training.assemble_config("han", preset="han", overrides=overrides)
    with pytest.raises(ValueError, match=r"temperature to be a finite float > 0"):
        layers.ContextAttention(temperature=float("inf"))


def test_the_batch_memory_bound_never_refuses_a_preset_and_suggests_a_power_of_two():
    from hatt.training.settings.limits import check_batch_memory

    for name in training.PRESETS:
        config = training.assemble_config(training.load_preset(name)["model"], preset=name)
        check_batch_memory(config, memory_bytes=2 * 2**30)  # a 2 GiB machine takes them all
    config = training.assemble_config("cnn", preset="cnn", overrides={"batch_size": 10**9})
    with pytest.raises(ValueError, match=r"activations fit in memory.*Try --set batch_size="):
        loop.check_buildable(config)  # before any data is read, on this machine's memory
    config.batch_size = 10**6
    with pytest.raises(ValueError, match=r"Try --set batch_size=(\d+) or less") as caught:
        check_batch_memory(config, memory_bytes=2**30)
    suggested = int(re.search(r"batch_size=(\d+) or less", str(caught.value)).group(1))
    assert suggested & (suggested - 1) == 0
    config.batch_size = suggested
    check_batch_memory(config, memory_bytes=2**30)


def test_build_refuses_a_misspelt_channel_setting():
    import hatt

    with pytest.raises(ValueError, match=r"'bukets' \(did you mean 'buckets'\?\)"):
        hatt.models.build("cnn", vocabulary_size=100, ngram={"bukets": 10})


@pytest.mark.parametrize("scaled", [True, {"bogus": [1, 2]}, {"num_buckets": 3}])
def test_a_malformed_scaled_record_is_a_clear_error(scaled):
    """Found by the config property test: scaled=True crashed inside scale.unscale."""
    with pytest.raises(ValueError, match="scaled"):
        training.TrainConfig.from_dict({"model": "cnn", "scaled": scaled})


def test_the_channel_s_table_is_sized_to_the_classes_or_refused():
    # issue 63, second pass: 2,000 classes x 2,097,152 buckets asked for a 16 GB table
    from hatt.training.settings import scale

    config = training.assemble_config("cnn", preset="cnn")
    fitted = config.fit_to_corpus([3] * 2000)
    assert fitted.ngram.buckets * 2000 <= scale.TABLE_FLOATS
    assert fitted.ngram.buckets == scale.table_buckets(2000) == 131072
    assert config.fit_to_corpus([500, 500]).ngram.buckets > 131072  # two classes: as before
    bare = training.assemble_config("cnn", preset=None)  # no channel: nothing to size
    assert bare.ngram is None and bare.fit_to_corpus([3] * 2000).ngram is None
    wide = training.assemble_config("cnn", preset=None, overrides={"ngram": {"buckets": 2**26}})
    with pytest.raises(ValueError, match=r"ngram.buckets=67,108,864 x 2,000 classes .* Set --set"):
        wide.fit_to_corpus([3] * 2000)
