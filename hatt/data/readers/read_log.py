"""What reading a corpus skipped or repaired: :class:`ReadLog`.

Every reader counts the rows and files it could not use, by reason, and names a
few of them; the summary is printed on standard error and kept in
``TextCorpus.report``: nothing a user wrote is dropped silently.
"""

import re
import sys

from hatt.data.readers.files import REPLACEMENT

# === What reading skipped ===========================================================

NOT_TEXT = "not text"
EMPTY_TEXT = "empty text"
EMPTY_LABEL = "empty label"
SHORT_ROW = "too few fields"
OUTSIDE = "outside the class folders"
_SKIP_MESSAGES = {
    NOT_TEXT: "Skipped {n} file(s) that are not UTF-8 text",
    EMPTY_TEXT: "Skipped {n} document(s) with an empty text",
    EMPTY_LABEL: "Skipped {n} document(s) with an empty label",
    SHORT_ROW: "Skipped {n} row(s) with too few fields (no text or no label)",
    OUTSIDE: "Skipped {n} file(s) outside the class folders",
}
_EXAMPLES = 3  # places named per reason in the printed summary


class ReadLog:
    """What reading a source skipped or repaired, and where (nothing is dropped silently).

    Reading records each skipped document with its reason and place (a file,
    or a table's line); :meth:`print_summary` writes one line per reason on
    standard error, and :meth:`as_dict` is the corpus's ``report``.
    """

    def __init__(self):
        self.skipped = {}  # reason -> places
        self.repaired = []  # places of documents whose invalid UTF-8 was replaced
        self.warnings = []
        self.test_in_training = 0  # test documents whose text also occurs in train/validation

    def skip(self, reason, where):
        self.skipped.setdefault(reason, []).append(where)

    def repair(self, where):
        self.repaired.append(where)

    def warn(self, message):
        self.warnings.append(message)

    def summary_lines(self):
        lines = [
            _SKIP_MESSAGES[reason].format(n=len(places)) + ": " + _examples(places)
            for reason, places in self.skipped.items()
        ]
        if self.repaired:
            lines.append(
                f"Replaced invalid UTF-8 bytes with U+FFFD in {len(self.repaired)} "
                f"document(s): {_examples(self.repaired)}"
            )
        return lines + [f"Warning: {message}" for message in self.warnings]

    def print_summary(self):
        for line in self.summary_lines():
            print(line, file=sys.stderr)

    def as_dict(self):
        return {
            "skipped": {reason: len(places) for reason, places in self.skipped.items()},
            "invalid_utf8": len(self.repaired),
            "warnings": list(self.warnings),
            "test_in_training": self.test_in_training,
        }


def _examples(places):
    shown = ", ".join(str(p) for p in places[:_EXAMPLES])
    return shown + (f" and {len(places) - _EXAMPLES} more" if len(places) > _EXAMPLES else "")


_LONE_SURROGATES = re.compile("[\ud800-\udfff]")


def _repair(text):
    """``text`` decoded with ``errors="surrogateescape"``: each undecodable byte as U+FFFD.

    Returns ``(text, whether any byte was replaced)``.
    """
    repaired, count = _LONE_SURROGATES.subn(REPLACEMENT, text)
    return repaired, count > 0


def kept_text(text, where, log):
    """``text`` repaired (:func:`_repair`), or ``None`` when it is empty: skipped and counted.

    The step every reader takes with each document it read: an empty text is
    recorded in ``log`` as skipped (``EMPTY_TEXT``), a repaired one as repaired.
    """
    text, replaced = _repair(text)
    if not text.strip():
        log.skip(EMPTY_TEXT, where)
        return None
    if replaced:
        log.repair(where)
    return text
