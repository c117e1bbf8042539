"""The readers of user files never raise anything but hatt's own errors on random bytes.

Random bytes stand in for every file a careless user can point hatt at: a
corpus tarball, review files inside a class folder, a `--file` of reviews, a
vectorizer file and a model file. Each reader either returns a defined result
or raises its documented error (`DataNotFoundError`, `NotTextError`,
`ExportError` or the `ValueError` whose message names the file) — never a
crash deep in a library.
"""

from hypothesis import example, given
from hypothesis import strategies as st

from hatt import export
from hatt.data import DataNotFoundError, Vectorizer, load_imdb
from hatt.data.readers.files import NotTextError, read_texts

random_bytes = st.binary(min_size=0, max_size=2048)


@given(data=random_bytes)
@example(data=b"")
@example(data=b"\x1f\x8b\x08\x00" + bytes(64))  # a gzip header, then nothing
def test_a_tarball_of_random_bytes_is_a_clear_data_error(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("tar") / "aclImdb.tar.gz"
    path.write_bytes(data)
    try:
        load_imdb(path, validation_size=1, progress=False)
    except DataNotFoundError as error:
        assert str(path) in str(error)


@given(files=st.lists(random_bytes, min_size=4, max_size=4))
def test_review_files_of_random_bytes_are_read_or_skipped(tmp_path_factory, files):
    root = tmp_path_factory.mktemp("corpus") / "aclImdb"
    for (split, label), data in zip(
        [("train", "pos"), ("train", "neg"), ("test", "pos"), ("test", "neg")], files, strict=True
    ):
        for i in range(3):
            folder = root / split / label
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{i}_{8 if label == 'pos' else 2}.txt").write_bytes(data[i:] or b"x")
    try:
        imdb = load_imdb(root, validation_size=1, progress=False)
    except (DataNotFoundError, ValueError) as error:  # e.g. a class left without reviews
        assert str(error)
    else:
        for split in (imdb.train, imdb.validation, imdb.test):
            assert len(split.texts) == len(split.labels) == len(split.ids)
            assert all(isinstance(t, str) and "\0" not in t for t in split.texts)


@given(data=random_bytes)
@example(data=b"A fine film.\n\xff\xfe broken bytes\n")
@example(data=b"\x89PNG\r\n\x1a\n\x00\x00")
def test_a_file_of_random_bytes_gives_reviews_or_not_text(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("file") / "reviews.txt"
    path.write_bytes(data)
    try:
        result = read_texts(str(path))
    except NotTextError as error:
        assert str(path) in str(error)
    else:
        assert all(text.strip() and "\n" not in text for text in result.texts)
        assert 0 <= result.replaced_lines <= len(result.lines)


@given(data=random_bytes)
@example(data=b'{"config": {}}')
@example(data=b'{"class_name": "Vectorizer", "config": {"vocabulary": "abc"}}')
def test_a_vectorizer_file_of_random_bytes_is_a_clear_error(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("vec") / "vectorizer.json"
    path.write_bytes(data)
    try:
        Vectorizer.load(path)
    except ValueError as error:
        assert "Could not read a Vectorizer" in str(error) and str(path) in str(error)


@given(data=random_bytes)
def test_a_model_file_of_random_bytes_is_a_clear_export_error(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("model") / "model.keras"
    path.write_bytes(data)
    try:
        export.load(path)
    except export.ExportError as error:
        assert str(path) in str(error)
    else:  # pragma: no cover - random bytes are never a model
        raise AssertionError("random bytes loaded as a model")
