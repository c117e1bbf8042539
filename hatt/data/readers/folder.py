"""A folder per class: ``DIR/CLASS/*`` or ``DIR/train/CLASS/*`` (and ``DIR/test/CLASS/*``)."""

from pathlib import Path

import numpy as np

from hatt.data.corpus import DataNotFoundError, RawCorpus, Split
from hatt.data.readers.archive import _hidden, extract_archive
from hatt.data.readers.files import NotTextError, decode_text
from hatt.data.readers.read_log import EMPTY_TEXT, NOT_TEXT, OUTSIDE
from hatt.data.readers.table import read_table, table_format
from hatt.progress import Progress


def class_folders(folder):
    """The class folders in ``folder``: its subfolders, except hidden ones and ``unsup``."""
    return sorted(
        p
        for p in Path(folder).iterdir()
        if p.is_dir() and not _hidden(p.name) and p.name != "unsup"
    )


def _visible(folder, path):
    """Whether no part of ``path`` under ``folder`` is hidden (``.git``, ``__MACOSX``)."""
    return not any(_hidden(part) for part in Path(path).relative_to(folder).parts)


TEXT_SUFFIX = ".txt"  # a folder's unlabelled documents: its files of this extension


def text_files(folder):
    """``(place, bytes)`` of every ``.txt`` file under ``folder`` (recursively, hidden ones
    left out), one at a time: a folder's unlabelled documents."""
    folder = Path(folder)
    for path in sorted(folder.rglob("*" + TEXT_SUFFIX)):
        if path.is_file() and _visible(folder, path):
            yield str(path), path.read_bytes()


def files_left_out(folder):
    """``{extension: count}`` of the visible files under ``folder`` that :func:`text_files`
    does not read (another extension than ``.txt``; ``""`` for none), largest first."""
    folder = Path(folder)
    counts = {}
    for path in folder.rglob("*"):
        if path.is_file() and not path.name.endswith(TEXT_SUFFIX) and _visible(folder, path):
            counts[path.suffix] = counts.get(path.suffix, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _leading_number(path):
    head = path.stem.split("_")[0]
    return int(head) if head.isascii() and head.isdigit() else -1


def document_files(folder):
    """The files under ``folder`` (recursively, hidden ones left out), by leading number, then path.

    ``123_9.txt`` comes before ``1000_1.txt``, so the order never depends on
    the file system.
    """
    folder = Path(folder)
    files = [p for p in folder.rglob("*") if p.is_file() and _visible(folder, p)]
    return sorted(files, key=lambda p: (_leading_number(p), p.relative_to(folder).as_posix()))


def read_files(paths, log, progress=True, unit="document"):
    """The texts of ``paths``: ``(texts, indices of the files kept)``.

    A file that is not text (an image dropped in a class folder) or holds only
    white space is skipped, a few invalid UTF-8 bytes are replaced with
    U+FFFD; both are recorded in ``log``.
    """
    bar = Progress(len(paths), enabled=progress and bool(paths), unit=unit)
    texts, kept = [], []
    for i, path in enumerate(paths):
        try:
            text, replaced = decode_text(Path(path).read_bytes(), repr(str(path)))
        except NotTextError:
            log.skip(NOT_TEXT, str(path))
        else:
            if not text.strip():
                log.skip(EMPTY_TEXT, str(path))
            else:
                texts.append(text)
                kept.append(i)
                if replaced:
                    log.repair(str(path))
        if i % 1000 == 0 or i == len(paths) - 1:
            bar.update(i + 1)
    return texts, kept


def _descend(folder):
    """The folder holding the data: through single wrapping folders (as archives hold)."""
    folder = Path(folder)
    while True:
        entries = [p for p in folder.iterdir() if not _hidden(p.name)]
        if len(entries) != 1 or not entries[0].is_dir() or entries[0].name in ("train", "test"):
            return folder
        if not any(p.is_dir() for p in entries[0].iterdir()):
            return folder  # FOLDER/ONE_CLASS/files: one class, which the class check reports
        folder = entries[0]


def _folder_layout(folder):
    """``(root, train folder, test folder or None)`` of a folder-per-class corpus."""
    root = _descend(folder)
    train, test = root / "train", root / "test"
    if train.is_dir() and class_folders(train):
        return root, train, (test if test.is_dir() and class_folders(test) else None)
    if class_folders(root):
        return root, root, None
    found = sorted(p.name for p in root.iterdir() if not _hidden(p.name))[:10]
    raise ValueError(
        f"Expected a folder with a subfolder per class (DIR/CLASS/*.txt, or "
        f"DIR/train/CLASS/*.txt). Received: {str(root)!r}, which holds no class folders "
        f"(found: {found or 'nothing'})."
    )


def read_class_folders(folder, prefix, log, progress=True):
    """The documents of ``folder/CLASS/...`` as a :class:`Split` with class-name labels.

    Ids are ``prefix`` and the file's path under ``folder``
    (``"train/sports/a.txt"``).
    """
    folder = Path(folder)
    for path in sorted(folder.iterdir()):
        if path.is_file() and not _hidden(path.name):
            log.skip(OUTSIDE, str(path))
    paths, names = [], []
    for class_folder in class_folders(folder):
        files = document_files(class_folder)
        if not files:
            log.warn(f"the class folder {class_folder} holds no files; it is not a class")
        paths.extend(files)
        names.extend([class_folder.name] * len(files))
    texts, kept = read_files(paths, log, progress)
    if not texts:
        raise ValueError(
            f"Expected documents in the class folders of {str(folder)!r}. Received: none "
            f"({len(paths)} file(s), none of them text)."
        )
    labels = np.array([names[i] for i in kept], dtype=object)
    ids = [prefix + paths[i].relative_to(folder).as_posix() for i in kept]
    return Split(texts, labels, ids)


def read_folder(folder, *, test=None, text_column="text", label_column="label", progress=True, log):
    """A folder-per-class corpus (``test=``: a separate test table or folder)."""
    root, train_folder, test_folder = _folder_layout(folder)
    if test_folder is not None and test is not None:
        raise ValueError(
            f"Expected test=None for a folder with its own test/ split ({test_folder}). "
            f"Received: test={str(test)!r}"
        )
    if progress:
        print(f"Reading documents from {root}")
    prefix = "train/" if train_folder != root else ""
    train = read_class_folders(train_folder, prefix, log, progress)
    if test_folder is not None:
        test_split = read_class_folders(test_folder, "test/", log, progress)
    else:
        test_split = read_test(test, text_column, label_column, progress, log)
    return RawCorpus(train, test_split, str(root))


def read_test(test, text_column, label_column, progress, log):
    """The separate test split ``test=`` names: a table, or a folder (or archive) of classes.

    A folder with a ``test/`` folder of classes gives that one.
    """
    if test is None:
        return None
    path = Path(test).expanduser()
    if not path.exists():
        raise DataNotFoundError(f"Could not load the test split: {str(test)!r} does not exist.")
    if table_format(path):
        return read_table(
            path, text_column=text_column, label_column=label_column, prefix="test", log=log
        )
    folder = _descend(extract_archive(path, progress) if path.is_file() else path)
    if (folder / "test").is_dir() and class_folders(folder / "test"):
        folder = folder / "test"  # a corpus folder given for its test split
    return read_class_folders(folder, "test/", log, progress)
