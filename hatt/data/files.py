"""Reviews from a text file, one per line (``hatt predict --file``, ``hatt inspect --file``)."""

import dataclasses
import sys
from pathlib import Path

REPLACEMENT = "\ufffd"
# A file whose decoded text is more than this share of replacement characters is
# not UTF-8 text (a PNG, a zip, another encoding).
MAX_UNDECODABLE = 0.1


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
    if b"\0" in data:
        raise ValueError(f"Expected --file to be a text file. Received: {name} holds NUL bytes.")
    text = data.decode("utf-8", errors="replace")
    undecodable = text.count(REPLACEMENT) - data.count(REPLACEMENT.encode("utf-8"))
    if undecodable > MAX_UNDECODABLE * max(len(text), 1):
        raise ValueError(
            f"Expected --file to be UTF-8 text. Received: {name}, of which "
            f"{undecodable} of {len(text)} characters are not UTF-8."
        )
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
