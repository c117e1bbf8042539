"""Text from files: reviews one per line (``hatt predict --file``, ``hatt inspect --file``),
and the check that tells text from binary data, used for every file hatt reads as
documents (also the review files of a corpus folder)."""

import dataclasses
import json
import sys
from pathlib import Path

REPLACEMENT = "\ufffd"
# A file whose decoded text is more than this share of replacement characters is
# (random bytes give about half; a short latin-1 review with two accents, 0.12)
# not UTF-8 text (a PNG, a zip, another encoding).
MAX_UNDECODABLE = 0.3


@dataclasses.dataclass
class TextFile:
    """The non-blank lines of a file: ``(line index, text)`` pairs, and how many were repaired."""

    path: str
    lines: list
    replaced_lines: int = 0

    @property
    def texts(self):
        return [text for _, text in self.lines]


def _read_bytes(path):
    if path == "-":
        return sys.stdin.buffer.read()
    if not Path(path).is_file():
        raise ValueError(f"No such file: --file {path!r}")
    return Path(path).read_bytes()


class NotTextError(ValueError):
    """A file that is not UTF-8 text (NUL bytes, or mostly undecodable)."""


def decode_text(data, name):
    """Decode `data` as UTF-8 text; refuse binary data.

    Args:
        data: the file's bytes.
        name: how to name the file in the error.

    Returns:
        `(text, replaced)`: the text, invalid bytes replaced by U+FFFD, and
        whether any were replaced.

    Raises:
        NotTextError: `data` holds NUL bytes, or more than `MAX_UNDECODABLE`
            of its characters are not UTF-8 (a PNG, a zip, another encoding).
    """
    if b"\0" in data:
        raise NotTextError(f"Expected a text file. Received: {name} holds NUL bytes.")
    text = data.decode("utf-8", errors="replace")
    undecodable = text.count(REPLACEMENT) - data.count(REPLACEMENT.encode("utf-8"))
    if undecodable > MAX_UNDECODABLE * max(len(text), 1):
        raise NotTextError(
            f"Expected UTF-8 text. Received: {name}, of which "
            f"{undecodable} of {len(text)} characters are not UTF-8."
        )
    return text, undecodable > 0


def read_texts(path):
    """The reviews of a text file, one per non-blank line (``"-"``: standard input).

    Invalid UTF-8 bytes in a few lines are replaced (U+FFFD) and counted in
    ``replaced_lines``; a file that is not text at all is refused.

    Args:
        path: a file path, or ``"-"`` for standard input.

    Returns:
        A :class:`TextFile`; its ``lines`` are ``(0-based line index, text)``.

    Raises:
        ValueError: the file does not exist, holds NUL bytes, or is mostly not
            UTF-8 (the message names the file).
    """
    data = _read_bytes(path)
    name = "standard input" if path == "-" else repr(str(path))
    try:
        text, _ = decode_text(data, name)
    except NotTextError as error:
        raise NotTextError(f"--file: {error}") from None
    lines, replaced = [], 0
    raw_lines = data.split(b"\n")
    for index, line in enumerate(text.split("\n")):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        if REPLACEMENT in line and REPLACEMENT.encode("utf-8") not in raw_lines[index]:
            replaced += 1
        lines.append((index, line))
    return TextFile(str(path), lines, replaced)


def file_lines(path):
    """``(place, bytes)`` of each line of a text file, one at a time: one document a line."""
    path = Path(path)
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            yield f"{path.name} line {number}", line.rstrip(b"\r\n")


def read_json_object(path):
    """The JSON object (a dict) a file holds: hatt's settings, manifests and states.

    Raises:
        OSError: the file cannot be read (``FileNotFoundError`` when absent).
        ValueError: it is not JSON, or holds something other than an object.
    """
    value = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, found a {type(value).__name__}")
    return value


def damaged_compressed_file(path, error, kind="gzip"):
    """The message for a compressed file that does not decompress: ``path`` is truncated or
    damaged (its stream ends early, a CRC or a block is wrong), or is not ``kind`` at all.

    Issue 63: a truncated ``.csv.gz`` was said not to be "gzip-compressed". The table
    reader and the archive reader (extracted or streamed) both say it this way.
    """
    text = str(error) or type(error).__name__
    if "Not a gzipped file" in text or "not a bzip2 file" in text.lower():
        return (
            f"Expected {str(path)!r} to be {kind}-compressed (its name says so). Received: {text}"
        )
    return (
        f"{str(path)!r} is a truncated or damaged {kind} file ({text}): copy or download it "
        "again (an interrupted download or copy leaves such a file)."
    )
