"""Every command-line default the docs quote is the parser's (issue 64: docs that agree).

A quote is a flag in backticks followed, within the same clause, by ``default N`` /
``(default: N)`` (``--threads`` threads (default 2), ``--seed``, default 1337), or by a
bare number in parentheses (``--predict-queue`` requests (1024)). The truth is the
default of that flag in ``hatt COMMAND``'s parser (any command that has the flag), or,
where the parser leaves it ``None`` and applies it later, the ``default: X`` its
``--help`` states.
"""

import argparse
import re
from pathlib import Path

import pytest

from hatt import cli

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]  # docs/lab: history
UNITS = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "s": 1, "ms": 1}
# a number (and its unit), or a word in backticks: `text`
VALUE = r"(\d[\d,.]*\d|\d|`[A-Za-z0-9_./-]+`)(?:\s(KiB|MiB|GiB|s|ms)\b)?"
# `--flag ...` then, before the clause ends or another flag starts, "default N"
WITH_DEFAULT = re.compile(
    r"`(--[a-z][a-z0-9-]*)[^`]*`((?:(?!`--)[^.;|]){0,60}?)(?<!the )\bdefault:?\s+" + VALUE
)
# `--flag` [a word or two] (N [unit])
IN_PARENTHESES = re.compile(
    r"`(--[a-z][a-z0-9-]*)`\s+(?:[a-z]+\s+){0,2}\((\d[\d,.]*)(?:\s(KiB|MiB|GiB|s|ms))?\)"
)
HELP_DEFAULT = re.compile(r"default:?\s+([A-Za-z0-9_./-]*[A-Za-z0-9_/])")


def _normal(value, unit=None):
    """A default as text: numbers without separators, a unit folded into bytes."""
    text = str(value).strip("`").replace(",", "")
    try:
        number = float(text) * UNITS.get(unit, 1)
    except ValueError:
        return text
    return f"{number:g}"


def parser_defaults():
    """``{flag: {default as text}}`` over every subcommand of ``hatt``."""
    found = {}
    commands = next(
        a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    for parser in commands.choices.values():
        for action in parser._actions:
            for flag in (o for o in action.option_strings if o.startswith("--")):
                values = found.setdefault(flag, set())
                unset = action.default is None or action.default is argparse.SUPPRESS
                if not (unset or action.default is False or action.default == []):
                    values.add(_normal(action.default))
                elif action.help and (stated := HELP_DEFAULT.search(action.help)):
                    values.add(_normal(stated.group(1)))
    return found


def quoted_defaults():
    """``[(page, flag, value as text, the quote)]`` of every page."""
    quotes = []
    for page in PAGES:
        text = page.read_text()
        for match in WITH_DEFAULT.finditer(text):
            flag, _, value, unit = match.groups()
            quotes.append((page.name, flag, _normal(value, unit), match.group(0)))
        for match in IN_PARENTHESES.finditer(text):
            flag, value, unit = match.groups()
            quotes.append((page.name, flag, _normal(value, unit), match.group(0)))
    return quotes


def test_the_scan_finds_the_quotes_it_is_meant_to():
    # the forms the docs use: each is read, so a changed default cannot hide in them
    found = {(flag, value) for _, flag, value, _ in quoted_defaults()}
    assert {("--threads", "2"), ("--seed", "1337"), ("--max-body-bytes", f"{2**20:g}")} <= found
    assert ("--predict-queue", "1024") in found and ("--text-column", "text") in found


@pytest.mark.parametrize("page, flag, value, quote", quoted_defaults())
def test_a_quoted_default_is_the_parsers(page, flag, value, quote):
    defaults = parser_defaults()
    assert flag in defaults, f"{page} quotes {flag}, which no hatt command has: {quote!r}"
    assert value in defaults[flag], (
        f"{page} says {quote!r}: {flag}'s default is {sorted(defaults[flag])} in the parser"
    )
