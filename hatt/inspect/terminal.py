"""Explanations in the terminal (rich): a score bar per sentence, words shaded by score.

Attention (unsigned) shades words from white to blue; the signed methods
(which explain the logit of the explained class) shade words blue towards
the class and red against it. `method="all"` prints one block per method
under each review's header and its logit decomposition.

A word whose weight in the review is exactly 0 (sparse or hard attention)
is printed dim, with no background, while every non-zero weight gets at
least a faint one; each review's header says which attention the model uses
and how many of its weights are exactly 0.
"""

import io
import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

from hatt.inspect.methods import ALL, is_signed, method_label
from hatt.progress import printable

BAR_WIDTH = 12
FAINTEST = 0.08  # the faintest background an unsigned non-zero weight gets
ZERO_STYLE = "dim"  # a weight exactly 0: dim text, no background


def _word_style(weight):
    """Unsigned: background from faint to strong blue by weight in (0, 1]; None at 0."""
    if weight <= 0:
        return None
    weight = max(weight, FAINTEST)
    red = int(255 - 215 * weight)
    green = int(255 - 160 * weight)
    foreground = "white" if weight > 0.55 else "black"
    return f"{foreground} on rgb({red},{green},255)"


def _signed_style(value):
    """Signed, in [-1, 1]: blue towards the explained class, red against; None near 0."""
    strength = abs(value)
    if strength < 0.08:
        return None
    fade = int(255 - 200 * strength)
    foreground = "white" if strength > 0.55 else "black"
    if value > 0:
        return f"{foreground} on rgb({fade},{int(255 - 150 * strength)},255)"
    return f"{foreground} on rgb(255,{fade},{fade})"


def _methods(explanations, method):
    """The methods shown, checked on every explanation (a bad name fails before printing)."""
    shown = []
    for e in explanations:
        for m in e.methods_to_show(method):
            if m not in shown:
                shown.append(m)
    return shown


def legend(explanations, method=None):
    """What the bars and shading show, one line per method shown."""
    lines = []
    han = any(e.sentence_weights is not None for e in explanations)
    for m in _methods(explanations, method):
        if is_signed(m):
            lines.append(
                f"{method_label(m)}: words shaded blue (towards the explained class) or red "
                "(against it) by their contribution to its logit; bars: the sentence's sum; "
                "relative to the review's largest |score|"
            )
            continue
        bar = f"sentence {method_label(m)}" if han else "the sentence's share of the word weights"
        shade = (
            f"sqrt(sentence weight) × word {method_label(m)} (Yang et al. 2016)"
            if han
            else f"word {method_label(m)}"
        )
        agnostic = " (class-agnostic)" if m == "attention" else ""
        lines.append(
            f"{method_label(m)}{agnostic}: bars: {bar}, relative to the review's top sentence "
            f"(number: the score); words: shaded by {shade}, relative to the review's strongest word"
        )
    return "\n".join(lines)


def _zero_note(explanations):
    """How a weight exactly 0 looks (in colour), when some explanation has one; else None."""
    if any(count for e in explanations for count, _ in (e.attention_zeros() or {}).values()):
        return (
            "dim words without a background: weight exactly 0 (sparse or hard attention); "
            "any non-zero weight has at least a faint background"
        )
    return None


def _mark(word, value, signed):
    """Without colour: `*word*` (unsigned) or `[+word]` / `[-word]` (signed) from half the top."""
    if abs(value) < 0.5:
        return word
    if not signed:
        return f"*{word}*"
    return f"[+{word}]" if value > 0 else f"[-{word}]"


def _plain_note(methods):
    """How words are marked without colour, for the methods shown."""
    marks = []
    if any(not is_signed(m) for m in methods):
        marks.append("*word* (unsigned scores)")
    if any(is_signed(m) for m in methods):
        marks.append("[+word] / [-word] (towards / against the explained class)")
    return f"no colour: {' and '.join(marks)} mark the words with at least half the top |score|"


def sentence_texts(e, method, plain=False):
    """Each sentence's words as a rich `Text`, each word styled by its `method` score.

    Unsigned scores: a blue background, at least a faint one for any
    non-zero weight; a word whose weight in the review is exactly 0
    (`Explanation.zero_reasons`) is dim with no background. Signed: blue
    towards the explained class, red against it. `plain`: no styles, marks
    instead (`*word*`, `[+word]`, `[-word]`).
    """
    signed = is_signed(method)
    lines = []
    for words, shading, zeros in zip(
        e.sentences, e.display_scores(method), e.zero_reasons(method), strict=True
    ):
        line = Text()
        for word, value, zero in zip(words, shading, zeros, strict=True):
            if zero:
                style = ZERO_STYLE
            else:
                style = _signed_style(value) if signed else _word_style(value)
            word = printable(word)
            line.append(_mark(word, value, signed) if plain else word, style=style)
            line.append(" ")
        lines.append(line)
    return lines


def _table(e, method, plain):
    """One method's block: a bar and the shaded words per sentence."""
    signed = is_signed(method)
    values = e.sentence_scores[method]
    bars = e.sentence_display(method)
    table = Table.grid(padding=(0, 1))
    table.add_column(justify="right", no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(ratio=1, overflow="fold")
    gap = Text(f"[… {e.omitted_words} words not seen by the model …]", style="italic")
    for s, line in enumerate(sentence_texts(e, method, plain)):
        if e.gap_before == s and e.omitted_words:
            table.add_row("", "", gap)
        filled = round(BAR_WIDTH * abs(bars[s]))
        colour = "red" if not signed or bars[s] < 0 else "blue"
        bar = Text("█" * filled, style=colour)
        bar.append("·" * (BAR_WIDTH - filled), style="dim")
        table.add_row(f"{values[s]:+.3f}" if signed else f"{values[s]:.3f}", bar, line)
    if e.gap_before == len(e.sentences) and e.omitted_words:
        table.add_row("", "", gap)
    return table


def render(explanations, console, method=None):
    """Print `explanations` to a `rich.console.Console`.

    Without colour (`console.no_color`, or not a terminal), words shaded at
    least half as strongly as the review's strongest word are marked
    `*word*` (attention), `[+word]` (towards the explained class) or
    `[-word]` (against it) instead.
    """
    plain = console.no_color or console.color_system is None
    methods = _methods(explanations, method)
    console.print(legend(explanations, method), style="dim")
    if plain:
        console.print(_plain_note(methods))
    elif _zero_note(explanations):
        console.print(_zero_note(explanations), style="dim")
    for number, e in enumerate(explanations, 1):
        console.print()
        shown = e.methods_to_show(method)
        headline = printable(e.headline(method))
        console.print(Text(f"Review {number} · {headline}", style="bold"))
        for line in (e.decomposition_line(), e.total_line(), e.attention_line()):
            if line is not None:
                console.print(Text("  " + printable(line)))
        if not e.sentences:
            console.print("  (no words: the review is empty for the model)")
            continue
        for m in shown:
            if len(methods) > 1 or method == ALL:
                console.print(Text(f"  {printable(e.method_note(m))}", style="italic"))
            console.print(_table(e, m, plain))


def to_terminal(explanations, file=None, color=None, width=None, method=None):
    """Print explanations for a terminal; also return them as plain text.

    Each review gets a header (family, method, prediction, true label) and
    the explained class's logit in parts when the model gives them, then,
    per method shown, one line per sentence: its score as a number and a bar
    (HAN attention: sentence attention; flat models: the sum of the
    sentence's word scores), and its words shaded by score, relative to the
    review's strongest word. Works when the output is not a terminal (no
    colour codes are written then, unless `color=True`).

    Args:
        explanations: List of `hatt.inspect.Explanation`.
        file: Where to print (default `sys.stdout`); `False` prints nothing.
        color: `True` / `False` to force colour on or off; `None` lets rich
            decide (on for a terminal).
        width: Line width; `None` for the terminal's (80 when not a
            terminal).
        method: One of the explanations' methods, `"all"` (one block per
            method) or `None` (the default view: attention when the model
            has it, else gradient × input).

    Returns:
        The rendered text without colour codes.
    """
    _methods(explanations, method)  # a bad name fails before anything is printed
    out = io.StringIO() if file is False else (sys.stdout if file is None else file)
    console = Console(
        file=out,
        force_terminal=True if color else None,
        no_color=color is False,
        color_system="truecolor" if color else "auto",
        width=width,
        highlight=False,
        record=True,
    )
    render(explanations, console, method)
    return console.export_text(styles=False)
