"""Fixtures of the model tests."""

import pytest

from tests import _recurrent_runs


@pytest.fixture(scope="session")
def recurrent_runs(tmp_path_factory):
    """``{"rnn" | "han": run}``: one `hatt train` run per recurrent family with
    ``cell=sru`` and ``attention_normalizer=sparsemax`` (tests/_recurrent_runs.py), read by
    test_sru_encoders.py and test_survey_options.py; trained on first use, once a session."""
    return _recurrent_runs.recurrent_runs(tmp_path_factory)
