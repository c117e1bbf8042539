"""Explanations in the terminal (rich): a weight bar per sentence, words shaded by weight."""

import io
import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

BAR_WIDTH = 12


def _header(number, explanation):
    return f"Review {number} · {explanation.headline()}"


def _word_style(weight):
    """Background from white to strong blue by weight in [0, 1]; None below 0.08."""
    if weight < 0.08:
        return None
    red = int(255 - 215 * weight)
    green = int(255 - 160 * weight)
    foreground = "white" if weight > 0.55 else "black"
    return f"{foreground} on rgb({red},{green},255)"


def legend(explanations):
    """One line that says what the bars and shading show."""
    han = any(e.sentence_weights is not None for e in explanations)
    kinds = sorted({e.score_kind for e in explanations})
    bar = "sentence attention" if han else "the sentence's share of the word weights"
    shade = (
        "sqrt(sentence weight) × word weight (Yang et al. 2016)"
        if han
        else "word " + " / ".join(kinds)
    )
    return (
        f"bars: {bar}, relative to the review's top sentence (number: the weight); "
        f"words: shaded by {shade}, relative to the review's strongest word"
    )


def render(explanations, console):
    """Print `explanations` to a `rich.console.Console`.

    Without colour (`console.no_color`, or not a terminal), words shaded at
    least half as strongly as the review's strongest word are marked
    `*word*` instead.
    """
    plain = console.no_color or console.color_system is None
    console.print(legend(explanations), style="dim")
    if plain:
        console.print("no colour: *word* marks the words with at least half the top weight")
    for number, e in enumerate(explanations, 1):
        console.print()
        console.print(Text(_header(number, e), style="bold"))
        if not e.sentences:
            console.print("  (no words: the review is empty for the model)")
            continue
        shares = e.sentence_shares()
        top_share = max(shares) or 1.0
        shading = e.display_weights()
        table = Table.grid(padding=(0, 1))
        table.add_column(justify="right", no_wrap=True)
        table.add_column(no_wrap=True)
        table.add_column(ratio=1, overflow="fold")
        gap = Text(f"[… {e.omitted_words} words not seen by the model …]", style="italic")
        for s, (words, share) in enumerate(zip(e.sentences, shares, strict=True)):
            if e.gap_before == s and e.omitted_words:
                table.add_row("", "", gap)
            filled = round(BAR_WIDTH * share / top_share)
            bar = Text("█" * filled, style="red")
            bar.append("·" * (BAR_WIDTH - filled), style="dim")
            line = Text()
            for word, weight in zip(words, shading[s], strict=True):
                if plain and weight >= 0.5:
                    word = f"*{word}*"
                line.append(word, style=_word_style(weight))
                line.append(" ")
            table.add_row(f"{share:.3f}", bar, line)
        if e.gap_before == len(e.sentences) and e.omitted_words:
            table.add_row("", "", gap)
        console.print(table)


def to_terminal(explanations, file=None, color=None, width=None):
    """Print explanations for a terminal; also return them as plain text.

    Each review gets a header (family, score kind, prediction, true label),
    then one line per sentence: its weight as a number and a bar (HAN:
    sentence attention; flat models: the sum of the sentence's word
    weights), and its words shaded by weight, relative to the review's
    strongest word. Works when the output is not a terminal (no colour
    codes are written then, unless `color=True`).

    Args:
        explanations: List of `hatt.inspect.Explanation`.
        file: Where to print (default `sys.stdout`); `False` prints nothing.
        color: `True` / `False` to force colour on or off; `None` lets rich
            decide (on for a terminal).
        width: Line width; `None` for the terminal's (80 when not a
            terminal).

    Returns:
        The rendered text without colour codes.
    """
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
    render(explanations, console)
    return console.export_text(styles=False)
