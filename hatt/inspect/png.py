"""Explanations as PNG heat maps (matplotlib, Agg backend: no display needed).

One figure per review, one panel per method shown (`method="all"`: every
method the model has, stacked, each titled). HAN: a sentences × words grid,
each cell holding its word, with a strip on the left coloured by the
sentence's score. Flat models: the review's words wrapped into rows of
`FLAT_COLUMNS`. A HAN sentence longer than `MAX_COLUMNS` words continues on
the next rows (a thin line marks where each sentence starts). Long reviews
are cut to `MAX_ROWS` rows; the figure says so.

Attention (unsigned) is drawn from white to blue (words) and red (the
sentence strip), HAN words by `sqrt(sentence attention) × word attention`;
the signed methods on a diverging map, red (against the explained class) –
white (0) – blue (towards it). Each panel is relative to the review's
largest |score| for its method. A word whose weight in the review is exactly
0 (sparse or hard attention) is a blank cell with grey text; every non-zero
unsigned weight gets at least the faintest shade (`FAINTEST`). The header
names the model's attention and its share of exact zeros.

Every image is `WIDTH_PX` pixels wide and `png_size(explanation, method)[1]`
high: `round(DPI * (header + ROW_INCHES * rows))` for one method (`rows`: the
rows shown, at least one), and `round(DPI * (header + panels * (PANEL_INCHES +
ROW_INCHES * rows) + titles))` for several. The captions are wrapped to the
image's width (never cut at its edge): `header` is `HEADER_INCHES` plus a line's
height for each line they take beyond one headline, two lines of legend and one
of notes; `titles`, a line's height for each line a panel's title takes beyond
one.
"""

import os
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.backends.backend_agg import RendererAgg  # noqa: E402
from matplotlib.colors import LinearSegmentedColormap  # noqa: E402
from matplotlib.font_manager import FontProperties  # noqa: E402

from hatt.inspect.methods import is_signed, method_label  # noqa: E402

DPI = 100
WIDTH_INCHES = 16.0
WIDTH_PX = int(DPI * WIDTH_INCHES)
HEADER_INCHES = 1.6
PANEL_INCHES = 0.35  # a panel's title, when a figure has several
ROW_INCHES = 0.34
MAX_ROWS = 30
MAX_COLUMNS = 20  # words per HAN row (longer sentences wrap)
FLAT_COLUMNS = 16  # words per row for flat models
MAX_CHARS = 12
FAINTEST = 0.08  # the faintest shade of an unsigned non-zero weight
ZERO_COLOUR = "#8c959f"  # the text of a word whose weight is exactly 0 (its cell blank)
MARGIN = 0.015  # the captions' left (and right) margin, a share of the width
# The header's captions: (font size, weight, lines the default header holds).
HEADLINE, LEGEND, NOTES = (12, "bold", 1), (9, "normal", 2), (9, "normal", 1)
TITLE = (10, "bold", 1)  # a panel's title, when a figure has several

WORD_CMAP = LinearSegmentedColormap.from_list("hatt_words", ["#ffffff", "#0969da"])
SENTENCE_CMAP = LinearSegmentedColormap.from_list("hatt_sentences", ["#ffffff", "#cf222e"])
# signed scores: against the explained class (red) – 0 (white) – towards it (blue)
DIVERGING_CMAP = LinearSegmentedColormap.from_list("hatt_signed", ["#b2182b", "#ffffff", "#2166ac"])


def _cell_values(e, method):
    """Each word's cell value: its shading, at least `FAINTEST` for a non-zero unsigned
    weight, NaN (a blank cell) for a weight exactly 0."""
    signed = is_signed(method)
    return [
        [
            np.nan if zero else v if signed or v <= 0 else max(v, FAINTEST)
            for v, zero in zip(row, zeros, strict=True)
        ]
        for row, zeros in zip(e.display_scores(method), e.zero_reasons(method), strict=True)
    ]


def _grid(explanation, method=None):
    """Rows of (words, cell values) to draw, the sentence strip values (or None), notes."""
    e = explanation
    shading = _cell_values(e, method)
    notes = []
    if e.sentence_weights is not None:
        shares = e.sentence_display(method)
        rows, strip, starts = [], [], []
        for s, (words, shade) in enumerate(zip(e.sentences, shading, strict=True)):
            for i in range(0, len(words), MAX_COLUMNS):  # long sentences wrap onto more rows
                starts.append(i == 0)
                rows.append((words[i : i + MAX_COLUMNS], shade[i : i + MAX_COLUMNS]))
                strip.append(shares[s])
        columns = min(max((len(w) for w, _ in rows), default=1), MAX_COLUMNS)
    else:
        tokens = [t for s in e.sentences for t in s]
        flat_shade = [w for s in shading for w in s]
        rows = [
            (tokens[i : i + FLAT_COLUMNS], flat_shade[i : i + FLAT_COLUMNS])
            for i in range(0, len(tokens), FLAT_COLUMNS)
        ]
        strip, starts = None, None
        columns = FLAT_COLUMNS
    if len(rows) > MAX_ROWS:
        hidden = len(rows) - MAX_ROWS
        notes.append(f"{hidden} more rows not shown")
        rows = rows[:MAX_ROWS]
        strip = None if strip is None else strip[:MAX_ROWS]
        starts = None if starts is None else starts[:MAX_ROWS]
    if e.omitted_words:
        notes.append(f"{e.omitted_words} words of the review were not seen by the model")
    return rows, strip, starts, columns, notes


def _heat(ax, values, cmap, signed=False):
    """Shading in [0, 1] (signed: [-1, 1]) as cells of `cmap`; NaN cells stay blank."""
    ax.imshow(
        np.ma.masked_invalid(values),
        cmap=DIVERGING_CMAP if signed else cmap,
        vmin=-1 if signed else 0,
        vmax=1,
        aspect="auto",
        interpolation="nearest",
    )


def png_size(explanation, method=None):
    """`(width, height)` in pixels of the PNG :func:`to_png` writes for `explanation`."""
    shown = explanation.methods_to_show(method)
    panels = len(shown)
    rows = max(len(_grid(explanation, shown[0])[0]), 1)
    header = _header_inches(_captions(explanation, method))
    if panels == 1:
        inches = header + ROW_INCHES * rows
    else:
        titles = sum(_extra_inches(_wrap(explanation.method_note(m), TITLE), TITLE) for m in shown)
        inches = header + panels * (PANEL_INCHES + ROW_INCHES * rows) + titles
    return WIDTH_PX, int(round(DPI * inches))


_MEASURE = RendererAgg(WIDTH_PX, DPI, DPI)  # measures text as the PNG draws it (pixels)


def _wrap(text, caption):
    """``text``'s lines, each wrapped at spaces to fit the image's width in ``caption``'s
    font (measured, so that wide letters wrap sooner); a word wider than a line is cut
    across lines. Issue 63: a long caption ran off the image's right edge."""
    size, weight, _ = caption
    font = FontProperties(size=size, weight=weight)
    room = WIDTH_PX * (1 - 2 * MARGIN)  # pixels

    def fits(line):
        with warnings.catch_warnings():  # a glyph the font lacks is measured as a box
            warnings.simplefilter("ignore")
            return _MEASURE.get_text_width_height_descent(line, font, ismath=False)[0] <= room

    lines = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            candidate = f"{line} {word}" if line else word
            if fits(candidate):
                line = candidate
                continue
            if line:
                lines.append(line)
            while not fits(word) and len(word) > 1:  # a word wider than the line
                cut = next(k for k in range(len(word) - 1, 0, -1) if fits(word[:k]) or k == 1)
                lines.append(word[:cut])
                word = word[cut:]
            line = word
        lines.append(line)
    return lines


def _line_inches(caption):
    return caption[0] * 1.6 / 72


def _extra_inches(lines, caption):
    """The height of ``lines`` beyond the lines ``caption``'s place holds by default."""
    return max(0, len(lines) - caption[2]) * _line_inches(caption)


def _header_inches(captions):
    """The header's height: :data:`HEADER_INCHES` and a line for each line beyond those the
    default header holds."""
    extra = sum(
        _extra_inches(lines, caption)
        for lines, caption in zip(captions, (HEADLINE, LEGEND, NOTES), strict=True)
    )
    return HEADER_INCHES + extra


def _short(word):
    return word if len(word) <= MAX_CHARS else word[: MAX_CHARS - 1] + "…"


def _words_axes(fig, rect, rows, columns, signed):
    """The grid of words, each cell coloured by its shading."""
    ax = fig.add_axes(rect)
    values = np.full((max(len(rows), 1), columns), np.nan)
    for r, (_, shade) in enumerate(rows):
        values[r, : len(shade)] = shade
    _heat(ax, values, WORD_CMAP, signed)
    font = 9 if columns <= 16 else 8
    for r, (words, shade) in enumerate(rows):
        for c, (word, value) in enumerate(zip(words, shade, strict=True)):
            colour = ZERO_COLOUR if np.isnan(value) else "white" if abs(value) > 0.6 else "black"
            ax.text(
                c, r, _short(word), ha="center", va="center", fontsize=font, color=colour,
            )  # fmt: skip
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_color("#d0d7de")
    return ax


def _strip_axes(fig, rect, ax, e, method, strip, starts, n_rows):
    """The HAN's sentence strip, each sentence's score written in it, lines between sentences."""
    signed = is_signed(method)
    sx = fig.add_axes(rect)
    column = np.asarray(strip + [np.nan] * (n_rows - len(strip)))[:, None]
    _heat(sx, column, SENTENCE_CMAP, signed)
    values = e.sentence_scores[method]
    sentence = -1
    for r, first in enumerate(starts):
        if first:
            sentence += 1
            text = f"{values[sentence]:+.2f}" if signed else f"{values[sentence]:.2f}"
            sx.text(0, r, text, ha="center", va="center", fontsize=8)
            if r:  # a thin line where a new sentence starts
                ax.axhline(r - 0.5, color="#8c959f", linewidth=0.6)
                sx.axhline(r - 0.5, color="#8c959f", linewidth=0.6)
    sx.set_xticks([])
    sx.set_yticks([])


def _panel(fig, e, method, bottom, top):
    """One method's heat map between `bottom` and `top` (figure fractions)."""
    rows, strip, starts, columns, _ = _grid(e, method)
    left_strip = 0.05 if strip is not None else 0.0
    grid_left = 0.015 + left_strip + (0.01 if strip is not None else 0)
    ax = _words_axes(
        fig, [grid_left, bottom, 0.985 - grid_left, top - bottom], rows, columns, is_signed(method)
    )
    if strip is not None:
        rect = [0.015, bottom, left_strip, top - bottom]
        _strip_axes(fig, rect, ax, e, method, strip, starts, max(len(rows), 1))


def _subtitle(e, methods):
    """What the colours of the figure mean."""
    if not e.sentences:
        return "no words: the review is empty for the model"
    if len(methods) > 1:
        return (
            f"signed methods: blue towards {e.explained_label!r}, red against, white 0; "
            "attention: white to blue (words), red (sentences); each panel relative to "
            "this review's maximum |score|"
        )
    han = e.sentence_weights is not None
    method = methods[0]
    if is_signed(method):
        scale = e.method_note(method) + (
            "; left strip: the sentence's sum" if han else f"; rows of {FLAT_COLUMNS} words"
        )
    elif han:
        scale = (
            "left strip: sentence attention (red); cells: sqrt(sentence) × word attention (blue)"
        )
    else:
        scale = f"cells: word {method_label(method)}, rows of {FLAT_COLUMNS} words in reading order"
    return scale + "; colours relative to this review's maximum"


def _attention_note(e):
    """The model's attention and its share of zeros, and how a zero is drawn; or `None`."""
    line = e.attention_line()
    if line is None or not any(count for count, _ in e.attention_zeros().values()):
        return line
    return f"{line}, grey on white"


def figure(explanation, method=None):
    """The matplotlib figure for one explanation (close it when done).

    Args:
        explanation: A `hatt.inspect.Explanation`.
        method: One of `explanation.views`, `"all"` (a panel each), or
            `None` for the default (the total when the model has it).
    """
    e = explanation
    methods = e.methods_to_show(method)
    width, height = png_size(e, method)
    inches = height / DPI
    captions = _captions(e, method)
    header = _header_inches(captions)
    fig = plt.figure(figsize=(width / DPI, inches), dpi=DPI)
    if len(methods) == 1:
        _panel(fig, e, methods[0], 0.15 / inches, 1 - (header - 0.25) / inches)
    else:
        rows = max(len(_grid(e, methods[0])[0]), 1)
        y = header - 0.25  # inches from the top
        for m in methods:
            title = _wrap(e.method_note(m), TITLE)
            fig.text(
                MARGIN, 1 - (y + 0.08) / inches, "\n".join(title), fontsize=10, weight="bold",
                va="top",
            )  # fmt: skip
            y += PANEL_INCHES + _extra_inches(title, TITLE)
            _panel(fig, e, m, 1 - (y + ROW_INCHES * rows) / inches, 1 - y / inches)
            y += ROW_INCHES * rows
    _draw_captions(fig, captions, inches)
    return fig


def _captions(e, method):
    """The header's three captions, each a list of lines wrapped to the image's width: the
    headline, the legend (the attention note and what the colours mean), the notes."""
    methods = e.methods_to_show(method)
    notes = _grid(e, methods[0])[4]
    if e.decomposition_line() is not None:
        notes = [" ".join(filter(None, (e.decomposition_line(), e.total_line()))), *notes]
    # The warnings' first clause (the whole sentences are in hatt inspect's output).
    notes = [f"warning: {w.split(':')[0]}" for w in e.warnings] + notes
    legend = "\n".join(filter(None, (_attention_note(e), _subtitle(e, methods))))
    return (
        _wrap(e.headline(method), HEADLINE),
        _wrap(legend, LEGEND),
        _wrap("; ".join(notes), NOTES) if notes else [],
    )


def _draw_captions(fig, captions, inches):
    """The captions at the top, each below the last (where the default header puts them
    when they take no more lines than it holds)."""
    headline, legend, notes = captions
    below = _extra_inches(headline, HEADLINE)
    fig.text(MARGIN, 1 - 0.3 / inches, "\n".join(headline), fontsize=12, weight="bold", va="top")
    fig.text(
        MARGIN, 1 - (0.66 + below) / inches, "\n".join(legend), fontsize=9, va="top",
        color="#57606a", linespacing=1.3,
    )  # fmt: skip
    below += _extra_inches(legend, LEGEND)
    if notes:
        fig.text(
            MARGIN, 1 - (1.05 + below) / inches, "\n".join(notes), fontsize=9, va="top",
            color="#9a6700", linespacing=1.3,
        )  # fmt: skip


def to_png(explanation, path, method=None):
    """Write one explanation's heat map to `path` (PNG, :func:`png_size` pixels).

    `method`: one of the explanation's methods, `"all"` (a panel each) or
    `None` (the default view).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = figure(explanation, method)
    try:
        with warnings.catch_warnings():
            # Emoji and rare scripts may lack a glyph in the default font: drawn as boxes.
            warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font")
            warnings.filterwarnings("ignore", message=r"Matplotlib currently does not support")
            partial = path.with_name(f".{path.name}.partial")  # whole or not at all
            try:
                fig.savefig(partial, dpi=DPI, format="png")
                os.replace(partial, path)
            finally:
                partial.unlink(missing_ok=True)  # a full disk left a 0-byte PNG (issue 63)
    finally:
        plt.close(fig)
    return path


def png_paths(path, count):
    """The file names :func:`write_pngs` uses: `path` itself for one review,
    else `stem_1.png`, `stem_2.png`, ... next to it."""
    path = Path(path)
    if count == 1:
        return [path]
    return [path.with_name(f"{path.stem}_{i}{path.suffix or '.png'}") for i in range(1, count + 1)]


def write_pngs(explanations, path, method=None):
    """Write one PNG per explanation (names from :func:`png_paths`); return the paths.

    `method` as for :func:`to_png`; checked on every explanation before any
    file is written.
    """
    for explanation in explanations:
        explanation.methods_to_show(method)
    paths = png_paths(path, len(explanations))
    for explanation, target in zip(explanations, paths, strict=True):
        to_png(explanation, target, method)
    return paths
