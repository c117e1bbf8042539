"""Presets scaled to the training split, and class_weight="auto" (hatt.training.settings.scale)."""

import dataclasses
import json
import math

import pytest

from hatt import run_dir as run_files
from hatt.cli import build_parser
from hatt.training import TrainConfig, assemble_config, load_preset
from hatt.training.settings.config import PRESETS
from hatt.training.settings.scale import (
    BUCKETS_MARGIN,
    CHANNEL_KEYS,
    CLASS_WEIGHT_RATIO,
    FILTERS_POWER,
    LATER_KEYS,
    MULTICLASS_NGRAM,
    NBLR_MULTICLASS_C,
    REFERENCE_DOCUMENTS,
    resolve_class_weight,
    scaled_buckets,
    scaled_filters,
)

FAMILY_PRESETS = [name for name in PRESETS if load_preset(name).get("model") == name]


@pytest.mark.parametrize("family", FAMILY_PRESETS)
def test_full_imdb_gives_the_preset_unchanged(family):
    unscaled = assemble_config(family).to_dict()
    config = assemble_config(family)
    half = REFERENCE_DOCUMENTS // 2
    config = config.fit_to_corpus([half, REFERENCE_DOCUMENTS - half])
    scaled = config.to_dict()
    assert scaled.pop("scaled") == {
        "train_documents": REFERENCE_DOCUMENTS,
        "class_weight": ["auto", None],
    }
    unscaled.pop("scaled")
    assert scaled.pop("class_weight") is None
    unscaled.pop("class_weight")
    assert scaled == unscaled


def test_small_corpus_scales_buckets_and_filters(capsys):
    preset = load_preset("cnn")
    asked = assemble_config("cnn")
    config = asked.fit_to_corpus([900, 900])
    assert asked == assemble_config("cnn")  # the caller's config is not changed
    buckets, filters = config.ngram.buckets, config.model_kwargs["filters"]
    share = 1800 / REFERENCE_DOCUMENTS
    wanted = BUCKETS_MARGIN * preset["ngram"]["buckets"] * share
    assert math.log2(buckets).is_integer() and wanted <= buckets < 2 * wanted
    assert buckets < preset["ngram"]["buckets"]
    assert filters % 50 == 0
    assert abs(filters - preset["model_kwargs"]["filters"] * share**FILTERS_POWER) <= 25
    assert filters < preset["model_kwargs"]["filters"]
    assert config.scaled["ngram.buckets"] == [preset["ngram"]["buckets"], buckets]
    assert config.scaled["model_kwargs.filters"] == [preset["model_kwargs"]["filters"], filters]
    shown = capsys.readouterr().out
    assert f"Scaled for 1,800 training documents: buckets {preset['ngram']['buckets']:,}" in shown
    # the recorded config (config.json) reads back as asked (a resumed run compares equal
    # to its command), and the same split resolves it the same way
    again = TrainConfig.from_dict(json.loads(json.dumps(config.to_dict())))
    assert again == assemble_config("cnn")
    again = again.fit_to_corpus([900, 900])
    assert again == config
    assert again.fit_to_corpus([9, 9]) == config  # resolved once


@pytest.mark.parametrize("documents", [1, 10, 500, 5000, 22500, 10**6])
def test_the_preset_is_the_cap_and_the_floor_holds(documents):
    assert 2**16 <= scaled_buckets(4194304, documents) <= 4194304
    assert scaled_buckets(1024, documents) == 1024  # a preset under the floor stays
    assert 100 <= scaled_filters(500, documents) <= 500


def test_keys_the_user_set_never_scale(tmp_path):
    config = assemble_config("cnn", overrides=["ngram.buckets=4194304"])
    assert config.scale == ["model_kwargs.filters", *MULTICLASS_NGRAM]
    config = config.fit_to_corpus([500, 500])
    assert config.ngram.buckets == 4194304
    assert config.model_kwargs["filters"] < 500
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"model_kwargs": {"filters": 500}}))
    config = assemble_config("cnn", config_file=str(settings))
    config = config.fit_to_corpus([500, 500])
    assert config.model_kwargs["filters"] == 500 and config.ngram.buckets < 4194304
    off = assemble_config("cnn", overrides=["scale=[]"])
    off = off.fit_to_corpus([500, 500])
    assert off.ngram.buckets == 4194304 and off.model_kwargs["filters"] == 500


@pytest.mark.parametrize("family", FAMILY_PRESETS)
def test_more_than_two_classes_give_the_channel_the_multiclass_grid(family, capsys):
    """Above two classes the preset's NB-LR channel becomes MULTICLASS_NGRAM's TF-IDF + LR;
    two classes keep the preset's, and a value the user set is kept."""
    preset = load_preset(family)["ngram"]
    counts = [300, 200, 250, 250]
    config = assemble_config(family).fit_to_corpus(counts)
    for key, value in MULTICLASS_NGRAM.items():
        name = key.split(".")[1]
        assert getattr(config.ngram, name) == value != preset[name]
        assert config.scaled[key] == [preset[name], value]
    assert config.ngram.channel().idf and config.ngram.channel().reduction == "l2"
    shown = capsys.readouterr().out
    assert "for 4 classes (TF-IDF + a softmax regression): ngram.init nblr → lr" in shown
    again = TrainConfig.from_dict(json.loads(json.dumps(config.to_dict())))
    assert again == assemble_config(family)  # config.json reads back as asked
    assert again.fit_to_corpus(counts) == config
    binary = assemble_config(family).fit_to_corpus([500, 500])
    assert all(
        getattr(binary.ngram, k.split(".")[1]) == preset[k.split(".")[1]] for k in MULTICLASS_NGRAM
    )
    own = assemble_config(family, overrides=["ngram.C=[0.5]"]).fit_to_corpus(counts)
    assert own.ngram.C == [0.5] and own.ngram.init == "lr"
    # an NB-LR channel the user keeps takes the NB-LR grid; a channel of counts stays as it is
    nblr = assemble_config(family, overrides=["ngram.init=nblr"]).fit_to_corpus(counts)
    assert (nblr.ngram.init, nblr.ngram.C) == ("nblr", NBLR_MULTICLASS_C)
    assert (nblr.ngram.order, nblr.ngram.idf) == (preset["order"], False)
    counted = assemble_config(family, overrides=["ngram.binary=false"]).fit_to_corpus(counts)
    assert (counted.ngram.reduction, counted.ngram.idf) == (preset["reduction"], False)


def test_a_run_with_a_start_keeps_the_preset_s_shapes():
    # the start is the preset trained on IMDB (--init imdb): scaled filters would leave no
    # layer of the CNN to copy; the channel still scales (it is fit on the new corpus)
    config = assemble_config("cnn", init="imdb").fit_to_corpus([500, 500])
    preset = load_preset("cnn")
    assert config.model_kwargs["filters"] == preset["model_kwargs"]["filters"]
    assert config.ngram.buckets < preset["ngram"]["buckets"]
    assert "model_kwargs.filters" not in config.scale and "ngram.buckets" in config.scale


def test_no_preset_and_direct_configs_do_not_scale():
    assert assemble_config("cnn", preset="none").scale == []
    config = TrainConfig(ngram={"buckets": 4096})
    config = config.fit_to_corpus([10, 10])
    assert config.ngram.buckets == 4096


def test_scale_names_a_known_key():
    with pytest.raises(ValueError, match=r"scale.*'model_kwargs.units'"):
        TrainConfig(scale=["model_kwargs.units"])


@pytest.mark.parametrize(
    ("counts", "expected"),
    [([100, 100], None), ([150, 100], None), ([151, 100], "balanced"), ([5, 40, 10], "balanced")],
)
def test_auto_class_weight_is_balanced_above_the_ratio(counts, expected):
    assert CLASS_WEIGHT_RATIO == 1.5
    assert resolve_class_weight("auto", counts) == expected
    config = TrainConfig()
    config = config.fit_to_corpus(counts)
    assert config.class_weight == expected
    assert config.scaled["class_weight"] == ["auto", expected]


def test_class_weight_none_turns_it_off():
    args = build_parser().parse_args(["train", "cnn", "--class-weight", "none"])
    config = assemble_config("cnn", class_weight=args.class_weight)
    assert config.class_weight is None
    config = config.fit_to_corpus([500, 50])
    assert config.class_weight is None
    balanced = assemble_config("cnn", class_weight="balanced")
    balanced = balanced.fit_to_corpus([100, 100])
    assert balanced.class_weight == "balanced"
    with pytest.raises(ValueError, match="class_weight='heavy'"):
        TrainConfig(class_weight="heavy")


@pytest.mark.parametrize(("counts", "alpha"), [([500, 500], 2.0), ([300, 200, 250, 250], 0.5)])
def test_a_run_saved_before_the_multiclass_keys_resumes(tmp_path, counts, alpha):
    """A backup whose ``scale`` predates ngram.alpha / ngram.C (LATER_KEYS) resumes under
    the same command, which then fits its channel by today's rules; another value is still
    a changed command."""
    import tensorflow as tf

    from hatt.training.run import loop, resume

    asked = assemble_config("han")
    assert set(LATER_KEYS) <= set(asked.scale)
    old = dataclasses.replace(asked, scale=[k for k in asked.scale if k not in LATER_KEYS])
    saved = old.fit_to_corpus(counts).to_dict()  # as the old run recorded it
    assert saved["ngram"]["alpha"] == 2.0 and "ngram.alpha" not in (saved["scaled"] or {})

    def backup(values):
        state = {"format": resume.STATE_FORMAT, "epoch": 1, "config": values}
        path = tmp_path / "run" / run_files.BACKUP / resume.STATE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(state))

    backup(saved)
    run = loop.check_run(asked, tmp_path / "run", tf.distribute.get_strategy())
    assert run.state["epoch"] == 1
    assert run.config.fit_to_corpus(counts).ngram.alpha == alpha  # today's rule from here on
    assert asked.saved_form(saved)["scale"] == asked.scale
    # a run saved today is compared as written, and an old run asked for another alpha
    # (or that set its own) is not the same command
    assert asked.saved_form(asked.fit_to_corpus(counts).to_dict()) == asked.to_dict()
    other = assemble_config("han", overrides=["ngram.alpha=1.0"])
    with pytest.raises(resume.RunError, match=r"other settings.*ngram"):
        loop.check_run(other, tmp_path / "run", tf.distribute.get_strategy())
    own = dataclasses.replace(old, ngram=dataclasses.replace(old.ngram, alpha=1.0))
    backup(own.fit_to_corpus(counts).to_dict())
    with pytest.raises(resume.RunError, match=r"other settings.*ngram"):
        loop.check_run(asked, tmp_path / "run", tf.distribute.get_strategy())


@pytest.mark.parametrize(("counts", "resumes"), [([500, 500], True), ([300, 200, 250, 250], False)])
def test_a_run_saved_before_the_tfidf_channel(tmp_path, counts, resumes):
    """A backup whose ``scale`` lists ngram.alpha and ngram.C but not the channel's layer
    and fit (CHANNEL_KEYS): a two-class run resumes under the same command (its channel
    does not change); a multi-class one was built with the NB-LR channel's layer, which
    today's command does not build, so it is refused as another command, not resumed
    into a model of other shapes."""
    import tensorflow as tf

    from hatt.training.run import loop, resume

    asked = assemble_config("cnn")
    assert set(CHANNEL_KEYS) <= set(asked.scale)
    old = dataclasses.replace(asked, scale=[k for k in asked.scale if k not in CHANNEL_KEYS])
    saved = old.fit_to_corpus(counts).to_dict()  # as the run recorded it
    assert saved["ngram"]["init"] == "nblr" and not saved["ngram"]["idf"]
    state = {"format": resume.STATE_FORMAT, "epoch": 1, "config": saved}
    path = tmp_path / "run" / run_files.BACKUP / resume.STATE_FILE
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(state))
    if resumes:
        run = loop.check_run(asked, tmp_path / "run", tf.distribute.get_strategy())
        assert run.state["epoch"] == 1
        assert run.config.fit_to_corpus(counts).ngram.init == "nblr"  # two classes: as it ran
    else:
        with pytest.raises(resume.RunError, match=r"other settings"):
            loop.check_run(asked, tmp_path / "run", tf.distribute.get_strategy())
