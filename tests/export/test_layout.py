"""The export folder's layout: which folder names are versions (issue 63)."""

import pytest

from hatt import export
from hatt.export.layout import is_version_name, version_numbers
from hatt.serve.served import model_name


@pytest.mark.parametrize(
    "name, expected",
    [("1", True), ("0012", True), ("²", False), ("٣", False), ("", False), ("1a", False)],
)
def test_only_ascii_digits_name_a_version(name, expected):
    assert is_version_name(name) is expected


def test_a_folder_named_with_other_digits_is_no_version(tmp_path):
    for name in ("²", "٣", "2"):
        (tmp_path / "cnn" / name).mkdir(parents=True)
        (tmp_path / "cnn" / name / "saved_model.pb").write_bytes(b"")
    assert version_numbers(tmp_path / "cnn") == [2]  # was "invalid literal for int()"
    assert model_name(tmp_path / "cnn" / "٣") == "٣"  # a folder of its own, not version 3
    assert model_name(tmp_path / "cnn" / "2") == "cnn"
    (tmp_path / "cnn" / "2" / "saved_model.pb").unlink()
    with pytest.raises(export.ExportError, match="holds no hatt model"):
        export.load(tmp_path / "cnn")
