"""Explanations as one self-contained HTML page, in the style of the HAN paper.

Every review is a card: a header with the prediction, the true label when
known and the model family; the explained class's logit in parts (deep
part + n-gram channel + bias) when the model gives them; then, per method,
a caption and one line per sentence with a band whose strength is the
sentence's score and its words highlighted by theirs (Yang et al. 2016,
figure 5). Hovering a word or a band shows its raw score (`title`
attributes).

Two palettes: attention (unsigned, the same for every class) keeps the
sequential one, a red band and blue words from white; the signed methods
(the total, gradient × input, integrated gradients, the n-gram channel,
which explain the logit of the explained class) are diverging, blue towards
the class, red against it, white at 0, each scaled by the review's largest
|score| for that method. The page opens on the total view (each word's
contribution to the whole logit) when the model has it.

A word whose weight in the review is exactly 0 (sparse attention:
sparsemax, entmax-1.5; hard attention) gets no shade at all, grey text and
the hover text "weight 0 (sparse attention)", while every non-zero weight
gets at least the palette's faintest shade: a zero never looks like a small
weight. Each card says which attention the model uses and how many of its
weights are exactly 0 (`Explanation.attention_line`).

A model whose parts should not be read alone (`Explanation.warnings`: a
deep part with a negative weight in the mix, or below the channel alone)
gets a warning box: once at the top of a page, on the card of a fragment.

The page holds every method's scores and switches between them with radio
inputs and CSS alone (plus an "all" view that stacks them): no scripts, no
fonts, no images, no network.

`review_html` renders one review as an HTML fragment (styled by `CSS`): the
one renderer, used for each card of `to_html` / `write_html` and by the page
of `hatt serve`.

`write_html` keeps pages usable for thousands of reviews: at most
`max_reviews` reviews (100 by default) a page, in several linked pages
(`out.html`, `out-2.html`, `out-3.html`, ...).
"""

import html
from pathlib import Path

from hatt import names
from hatt._version import __version__
from hatt.export.attribution import METHODS
from hatt.inspect.methods import ALL, is_signed, method_label

_BASE_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 60em; color: #1f2328; background: #fff; line-height: 1.6; }
h1 { font-size: 1.4em; margin-bottom: .2em; }
.meta, .legend, .caption, .decomposition, .attention { color: #57606a; font-size: .9em; }
.attention { margin: .2em 0; }
.warning { border: 1px solid #d4a72c; background: #fff8c5; color: #3b2300; border-radius: 6px;
           padding: .4em .8em; margin: .6em 0; font-size: .9em; }
.warning p { margin: .2em 0; }
.caption { margin: .6em 0 .2em 0; font-weight: 600; }
.decomposition { font-family: ui-monospace, monospace; margin: .2em 0; }
.legend span.swatch { display: inline-block; width: 8em; height: .9em; vertical-align: middle;
                      border: 1px solid #d0d7de; margin: 0 .4em; }
.review { border: 1px solid #d0d7de; border-radius: 6px; margin: 1.5em 0; padding: .8em 1em; }
.review h2 { font-size: 1.05em; margin: 0 0 .5em 0; }
.tag { display: inline-block; padding: 0 .5em; border-radius: 1em; font-size: .85em;
       margin-right: .3em; background: #eaeef2; }
.tag.pos { background: #dafbe1; } .tag.neg { background: #ffebe9; }
.tag.wrong { background: #cf222e; color: #fff; } .tag.right { background: #1a7f37; color: #fff; }
.sentence { display: flex; align-items: stretch; margin: 2px 0; }
.band { flex: 0 0 3.2em; margin-right: .6em; border-radius: 3px; font-size: .75em;
        text-align: right; padding-right: .3em; color: #57606a; }
.words { flex: 1; }
.words span { padding: 1px 2px; border-radius: 3px; }
span.zero { color: #8c959f; background: none; }
.gap { color: #57606a; font-style: italic; margin: .3em 0 .3em 3.8em; }
nav.pages { margin: 1em 0; padding: .4em .8em; background: #f6f8fa; border-radius: 6px; }
nav.pages a { margin: 0 .3em; }
nav.methods { margin: 1em 0; }
nav.methods label { display: inline-block; padding: .1em .7em; margin-right: .3em;
                    border: 1px solid #d0d7de; border-radius: 1em; cursor: pointer; }
input.switch { position: absolute; opacity: 0; pointer-events: none; }
details { margin-top: .6em; font-size: .85em; color: #57606a; }
details div { white-space: pre-wrap; }
"""

SENTENCE_RGB = (207, 34, 46)  # attention: red band, as in the HAN paper
WORD_RGB = (9, 105, 218)  # attention: blue words
TOWARDS_RGB = (33, 102, 172)  # signed scores > 0: towards the explained class (blue)
AGAINST_RGB = (178, 24, 43)  # signed scores < 0: against it (red)
WORD_ALPHA, BAND_ALPHA = 0.85, 0.8
LEVELS = 20  # shades of a word palette


def _rgba(rgb, alpha):
    return f"rgba({rgb[0]},{rgb[1]},{rgb[2]},{alpha:.3f})"


def colour(value, signed, rgb=WORD_RGB, alpha=WORD_ALPHA):
    """The background of a score shaded `value` (`[0, 1]`, or `[-1, 1]` when `signed`).

    Unsigned: `rgb` from transparent (white) to `alpha`. Signed (diverging):
    `TOWARDS_RGB` above 0, `AGAINST_RGB` below, transparent at 0. The
    sentence bands' colour (words take `shade_class`).
    """
    if signed:
        rgb = TOWARDS_RGB if value > 0 else AGAINST_RGB
    return _rgba(rgb, alpha * min(abs(float(value)), 1.0))


def shade_class(value, signed):
    """The CSS class of a word shaded `value` (`[0, 1]`, or `[-1, 1]` when `signed`).

    `LEVELS` steps a palette: `w1` ... `w20` (unsigned, `WORD_RGB`), `p1` ...
    (towards the explained class, `TOWARDS_RGB`), `n1` ... (against it,
    `AGAINST_RGB`). Unsigned: `""` (no colour) for 0 only, any other value
    at least `w1`, so that an exact zero (sparse attention) stands apart
    from a small weight. Signed: `""` below half a step (0 is their
    neutral). Classes, not inline colours, keep a page of many reviews and
    methods small.
    """
    level = min(round(abs(float(value)) * LEVELS), LEVELS)
    if not signed and value > 0:
        level = max(level, 1)
    if level == 0:
        return ""
    return f"{'w' if not signed else 'p' if value > 0 else 'n'}{level}"


def _shade_css():
    """The word shades' classes (see `shade_class`)."""
    return "\n".join(
        f".words .{prefix}{level} {{ background: {_rgba(rgb, WORD_ALPHA * level / LEVELS)}; }}"
        + (f" .words .{prefix}{level} {{ color: #fff; }}" if level > 0.6 * LEVELS else "")
        for prefix, rgb in (("w", WORD_RGB), ("p", TOWARDS_RGB), ("n", AGAINST_RGB))
        for level in range(1, LEVELS + 1)
    )


CSS = _BASE_CSS + _shade_css() + "\n"


def _class_name(e, index):
    """The name of class `index` for `e` (its `class_names` when it has them)."""
    names = getattr(e, "class_names", None)
    if names and 0 <= index < len(names):
        return str(names[index])
    return {1: "positive", 0: "negative"}.get(index, "?")


def _prediction_tag(e):
    """The predicted class and its probability (binary: also `p(positive)`)."""
    esc = html.escape
    label = getattr(e, "predicted_label", None)
    if label is not None:
        probability = float(e.predicted_probability)
        text = f"predicted {esc(str(label))} (p = {probability:.3f})"
    else:
        text = f"predicted {_class_name(e, e.prediction)} (p(positive) = {e.probability:.3f})"
    kind = "pos" if e.prediction else "neg"
    if len(getattr(e, "class_names", None) or ()) > 2:
        kind = "class"
    return f'<span class="tag {kind}">{text}</span>'


def _tags(e, methods):
    """The header tags of a review: prediction, true label, family and the methods shown."""
    esc = html.escape
    tags = [_prediction_tag(e)]
    if e.label is not None:
        right = e.label == e.prediction
        tags.append(
            f'<span class="tag {"right" if right else "wrong"}">'
            f"true {esc(_class_name(e, e.label))}"
            f" · {'correct' if right else 'wrong'}</span>"
        )
    shown = ", ".join(method_label(m) for m in methods)
    tags.append(f'<span class="tag">{esc(e.family)} · {esc(shown)}</span>')
    return "".join(tags)


def _word_title(e, method, s, i, han):
    """The hover text of a word: its raw score first (the method is in the view's caption)."""
    value = e.scores[method][s][i]
    if is_signed(method):
        return f"{value:+.4f}"
    if han:
        share = value * e.sentence_scores[method][s]
        return f"{value:.4f} in the sentence, {share:.4f} of the review"
    return f"{value:.4f}"


def _band(e, method, s, han):
    """A sentence's band: its score as a colour, a number and a hover text."""
    signed = is_signed(method)
    value = e.sentence_scores[method][s]
    shade = e.sentence_display(method)[s]
    if signed:
        title, text = f"{method_label(method)}: the sentence's sum {value:+.4f}", f"{value:+.2f}"
    elif han:
        title, text = f"sentence {method_label(method)} {value:.4f}", f"{value:.2f}"
        reasons = [r for r in e.zero_reasons(method)[s] if r and r.startswith("sentence")]
        if reasons:  # exactly 0: the sentence's words are left unshaded
            title += f" · {reasons[0]}"
    else:
        title, text = f"sum of its word weights {value:.4f}", f"{value:.2f}"
    style = f"background:{colour(shade, signed, SENTENCE_RGB, BAND_ALPHA)}"
    if abs(shade) > 0.6:  # legible on a strong band
        style += ";color:#fff"
    return f'<div class="band" style="{style}" title="{html.escape(title)}">{text}</div>'


def _sentence_rows(e, method):
    """One `<div class="sentence">` per sentence (band + highlighted words), gaps included."""
    esc = html.escape
    signed = is_signed(method)
    han = e.sentence_weights is not None and not signed
    shading = e.display_scores(method)
    zeros = e.zero_reasons(method)
    gap = (
        f'<div class="gap">[… {e.omitted_words} words not seen by the model …]</div>'
        if e.omitted_words
        else ""
    )
    parts = []
    for s, words in enumerate(e.sentences):
        if e.gap_before == s:
            parts.append(gap)
        spans = []
        for i, word in enumerate(words):
            title = _word_title(e, method, s, i, han)
            if zeros[s][i]:  # exactly 0 in the review: no shade at all, grey
                shade, title = "zero", f"{title} · {zeros[s][i]}"
            else:
                shade = shade_class(shading[s][i], signed)
            attribute = f' class="{shade}"' if shade else ""
            spans.append(f'<span{attribute} title="{esc(title)}">{esc(word)}</span>')
        parts.append(
            f'<div class="sentence">{_band(e, method, s, han)}'
            f'<div class="words">{" ".join(spans)}</div></div>'
        )
    if e.gap_before is not None and e.gap_before >= len(e.sentences):
        parts.append(gap)
    return parts


def warnings_html(warnings):
    """A warning box listing `warnings` (str each, escaped), or `""` when there are none."""
    if not warnings:
        return ""
    items = "".join(f"<p>{html.escape(w)}</p>" for w in warnings)
    return f'<div class="warning" role="note"><b>Warning about this model.</b>{items}</div>'


def review_html(e, number=1, heading=None, method=None, warnings=True):
    """One review's explanation as an HTML fragment: THE renderer of a review.

    `write_html` / `to_html` put one per review on a page (with every
    method, switched by the page); `hatt serve`'s page inserts the same
    fragment for each model it asks. Everything from the review (words, raw
    text, names) is escaped; the fragment has no scripts and no external
    references, only inline colours; style it with `CSS`.

    Args:
        e: A `hatt.inspect.Explanation`.
        number: The review's number (its `id="review-N"` and heading).
        heading: The heading's text before the tags; defaults to
            `"Review {number}"`.
        method: The scores to show: one of `e.views`, `"all"` (each method
            in turn, `<div class="view m-METHOD">` each), or `None` for the
            default (the total when the model has it, else attention, else
            gradient × input).
        warnings: Show the model's warnings (`e.warnings`) in the card; a
            page that shows them once at its top passes `False`.

    Returns:
        A `<section class="review">` element (str).
    """
    esc = html.escape
    methods = e.methods_to_show(method)
    heading = f"Review {number}" if heading is None else heading
    parts = [f'<section class="review" id="review-{int(number)}">']
    parts.append(f"<h2>{esc(heading)} {_tags(e, methods)}</h2>")
    if warnings:
        parts.append(warnings_html(e.warnings))
    line = " ".join(filter(None, (e.decomposition_line(), e.total_line())))
    if line:
        parts.append(f'<p class="decomposition" title="{esc(_DECOMPOSITION_HELP)}">{esc(line)}</p>')
    parts.append(attention_html(e))
    for m in methods:
        parts.append(f'<div class="view m-{esc(m)}">')
        parts.append(f'<p class="caption">{esc(e.method_note(m))}</p>')
        if not e.sentences:
            parts.append('<p class="gap">No words: the review is empty for the model.</p>')
        parts.extend(_sentence_rows(e, m))
        parts.append("</div>")
    parts.append(
        f"<details><summary>original text</summary><div>{esc(e.text)}</div></details></section>"
    )
    return "\n".join(parts)


def attention_html(e):
    """The card's line on the model's attention (`Explanation.attention_line`), or `""`.

    When some weights are exactly 0 it shows how such words look: grey and
    unshaded.
    """
    line = e.attention_line()
    if line is None:
        return ""
    zeros = e.attention_zeros()
    key = ""
    if any(count for count, _ in zeros.values()):
        key = ' · <span class="zero">grey, unshaded</span>: weight exactly 0'
    return (
        f'<p class="attention" title="{html.escape(_ATTENTION_HELP)}">{html.escape(line)}{key}</p>'
    )


_ATTENTION_HELP = (
    "The normalizer of the model's attention: softmax gives every word some weight; sparsemax "
    "and entmax-1.5 (sparse attention) and hard attention give many words exactly 0, shown "
    "grey and unshaded (any non-zero weight is shaded at least faintly)"
)

_DECOMPOSITION_HELP = (
    "The explained class's logit = the deep part (the network over the word embeddings) "
    "+ the n-gram channel (a linear model of the review's n-grams) + the head's bias "
    "= the words' total scores + the baseline (the logit with no word evidence: every word "
    "embedding at zero and no channel)"
)

MAX_REVIEWS = names.MAX_REVIEWS


def page_methods(explanations):
    """Every method some explanation has, in `METHODS` order (unknown kinds last)."""
    found = {m for e in explanations for m in e.views}
    return sorted(found, key=lambda m: METHODS.index(m) if m in METHODS else len(METHODS))


def page_method(explanations, method=None):
    """The view a page opens on: `method` (checked), else the first review's default."""
    methods = page_methods(explanations)
    if method is None:
        return explanations[0].default_method() if explanations else ALL
    if method != ALL and method not in methods:
        raise ValueError(
            f"Expected method to be one of this model's methods {tuple(methods)} or 'all'. "
            f"Received: method={method!r}"
        )
    return method


def to_html(explanations, title="hatt: what the model looked at", method=None):
    """Render explanations as one self-contained HTML page (a str).

    Args:
        explanations: List of `hatt.inspect.Explanation` (any number; for
            many, `write_html` splits them into pages).
        title: The page title.
        method: The method the page opens on (a name of the model's
            methods, `"all"`, or `None` for the default); every method's
            scores are in the page, a switch at its top shows one or all.

    Returns:
        The HTML document. Colours are relative to each review and method:
        the strongest sentence gets the full band, the strongest word the
        full highlight (HAN attention: `sqrt(sentence weight) × word
        weight`, as in Yang et al. 2016). Hover shows the raw scores.
    """
    return _page(explanations, title, first=1, navigation="", method=method)


def _switch(methods, checked):
    """The method switch: radio inputs (before the switched content) and their labels."""
    choices = [*methods, ALL]
    inputs = "".join(
        f'<input type="radio" class="switch" name="method" id="show-{m}"'
        f"{' checked' if m == checked else ''}>"
        for m in choices
    )
    labels = " ".join(
        f'<label for="show-{m}">{html.escape(method_label(m) if m != ALL else "all, stacked")}'
        "</label>"
        for m in choices
    )
    return inputs, f'<nav class="methods">Show: {labels}</nav>'


def _switch_css(methods):
    """CSS that shows only the checked method's views and marks its label."""
    rules = []
    for m in methods:
        rules.append(f"#show-{m}:checked ~ .switched .view:not(.m-{m}) {{ display: none; }}")
    for m in [*methods, ALL]:
        rules.append(
            f'#show-{m}:checked ~ nav.methods label[for="show-{m}"] '
            "{ background: #1f2328; color: #fff; border-color: #1f2328; }"
        )
    return "\n".join(rules)


def _page(explanations, title, first, navigation, method=None):
    """One page: the header, the switch, `navigation` (HTML), reviews numbered from `first`."""
    esc = html.escape
    methods = page_methods(explanations)
    checked = page_method(explanations, method)
    inputs, labels = _switch(methods, checked) if len(methods) > 1 else ("", "")
    body = "\n".join(
        review_html(e, i, method=ALL, warnings=False) for i, e in enumerate(explanations, first)
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{CSS}\n{_switch_css(methods)}</style></head><body>\n"
        f"<h1>{esc(title)}</h1>\n"
        f'<p class="meta">{_summary(explanations)} · hatt {esc(__version__)}</p>\n'
        f"{warnings_html(page_warnings(explanations))}\n"
        f"{inputs}\n{labels}\n"
        f'<div class="switched">\n{_legend(explanations, methods)}\n{navigation}\n{body}\n'
        f"{navigation}\n</div>\n</body></html>\n"
    )


def page_warnings(explanations):
    """The warnings of the models of `explanations`, each once, in order."""
    return list(dict.fromkeys(w for e in explanations for w in e.warnings))


def _summary(explanations):
    esc = html.escape
    families = sorted({e.family for e in explanations})
    known = [e for e in explanations if e.label is not None]
    summary = f"{len(explanations)} review(s) · model: {esc(', '.join(families)) or '–'}"
    methods = ", ".join(method_label(m) for m in page_methods(explanations))
    summary += f" · methods: {esc(methods) or '–'}"
    if known:
        correct = sum(e.label == e.prediction for e in known)
        summary += f" · {correct} of {len(known)} predicted correctly"
    return summary


def _swatch(*stops):
    return (
        '<span class="swatch" style="background:linear-gradient(90deg,'
        + ",".join(stops)
        + ')"></span>'
    )


def _explained(explanations):
    """Which class the signed scores explain: one name, or "each review's predicted class"."""
    names = {e.explained_label for e in explanations}
    if len(names) == 1:
        return f"class {next(iter(names))!r}"
    return "each review's predicted class (named on the review)"


_SIGNED_HOW = {
    "total": "each word's contribution to the whole logit: the deep part's integrated "
    "gradients (with the deep part's weight in the model) plus the n-gram channel's exact "
    "share; a review's words sum to its logit minus the baseline (the logit with no word "
    "evidence), up to integrated gradients' completeness error",
    "gradient_x_input": "gradient × input over the word embeddings (a first-order estimate)",
    "integrated_gradients": "integrated gradients over the word embeddings from a zero "
    "baseline (its completeness error on each review)",
    "ngram": "the n-gram channel's exact share: each n-gram's weight divided equally among "
    "its words, so the words sum to the channel's logit",
}


def _method_legend(explanations, method):
    """What one method's colours mean, which class it explains, on this page."""
    esc = html.escape
    han = any(e.sentence_weights is not None for e in explanations)
    if is_signed(method):
        explained = _explained(explanations)
        text = (
            f"<b>{esc(method_label(method))}</b>: {esc(_SIGNED_HOW[method])}. Signed: it "
            f"explains the logit of {esc(explained)}. Words"
            f"{_swatch(_rgba(AGAINST_RGB, WORD_ALPHA), 'rgba(255,255,255,0)', _rgba(TOWARDS_RGB, WORD_ALPHA))}"
            "red: against the class, white: 0, blue: towards it; the band: the sentence's "
            "sum. Scaled by the review's largest |score|."
        )
        if any("attention" in e.views for e in explanations):
            text += " Attention, by contrast, is class-agnostic."
    else:
        band = (
            f"sentence {method_label(method)}"
            if han
            else "the sentence's share of the word weights"
        )
        word = (
            f"sqrt(sentence {method_label(method)}) × word {method_label(method)}"
            if han
            else f"word {method_label(method)}"
        )
        agnostic = (
            "the model's own weights, class-agnostic (the same whatever the class)"
            if method == "attention"
            else "|gradient × input| of the predicted class's logit, a share of the review's total"
        )
        text = (
            f"<b>{esc(method_label(method))}</b>: {esc(agnostic)}. Band"
            f"{_swatch(_rgba(SENTENCE_RGB, 0), _rgba(SENTENCE_RGB, BAND_ALPHA))}{esc(band)}; "
            f"words{_swatch(_rgba(WORD_RGB, 0), _rgba(WORD_RGB, WORD_ALPHA))}{esc(word)}. "
            "Relative to each review (its strongest sentence / word = full colour)."
        )
    return f'<p class="legend view m-{esc(method)}">{text}</p>'


def _legend(explanations, methods):
    parts = [_method_legend(explanations, m) for m in methods]
    if any(count for e in explanations for count, _ in (e.attention_zeros() or {}).values()):
        parts.append(
            '<p class="legend"><span class="zero">grey, unshaded</span>: a word whose weight '
            "is exactly 0 (sparse attention: sparsemax, entmax-1.5; or hard attention), "
            "not a small weight: every non-zero weight has at least the faintest shade. The "
            "line under each heading names the model's attention and its share of zeros.</p>"
        )
    parts.append(
        '<p class="legend">Hover for the raw scores. Words are the model\'s tokens '
        "(lower-cased, punctuation dropped). The line under each heading splits the "
        "explained class's logit: deep part + n-gram channel + bias, and, with the total "
        "view, the words' total + the baseline.</p>"
    )
    return "\n".join(parts)


def _navigation(page, paths, total, per_page):
    """Links to the other pages of a split page (empty for a single page)."""
    if len(paths) == 1:
        return ""
    first = (page - 1) * per_page + 1
    last = min(page * per_page, total)
    links = [
        f"<b>{k}</b>" if k == page else f'<a href="{html.escape(p.name)}">{k}</a>'
        for k, p in enumerate(paths, 1)
    ]
    around = []
    if page > 1:
        around.append(f'<a href="{html.escape(paths[page - 2].name)}">‹ previous</a>')
    if page < len(paths):
        around.append(f'<a href="{html.escape(paths[page].name)}">next ›</a>')
    return (
        f'<nav class="pages">Reviews {first}–{last} of {total}, page {page} of {len(paths)} '
        f"({per_page} a page) · pages: {' '.join(links)} · {' '.join(around)}</nav>"
    )


def page_paths(path, pages):
    """The files of a `pages`-page `write_html` to `path`: `path`, then `STEM-2.SUFFIX`, ..."""
    path = Path(path)
    return [path] + [path.with_name(f"{path.stem}-{k}{path.suffix}") for k in range(2, pages + 1)]


def write_html(
    explanations,
    path,
    title="hatt: what the model looked at",
    max_reviews=MAX_REVIEWS,
    method=None,
):
    """Write the explanations as linked HTML pages of at most `max_reviews` reviews each.

    One page (`path`) when they fit; otherwise `path` holds reviews 1 to
    `max_reviews`, `STEM-2.html` the next ones, and so on (see
    `page_paths`), each page with links to the others at its top and its
    bottom. Reviews keep their numbers across pages.

    Args:
        explanations: List of `hatt.inspect.Explanation`.
        path: The first page (UTF-8); its folder is created.
        title: The page title.
        max_reviews: Reviews a page (a positive int), or `None` for one
            page however long.
        method: The method the pages open on (see `to_html`).

    Returns:
        The path of the first page (the others are linked from it).
    """
    if max_reviews is not None and (
        isinstance(max_reviews, bool) or not isinstance(max_reviews, int) or max_reviews < 1
    ):
        raise ValueError(
            f"Expected max_reviews to be a positive int or None. Received: max_reviews={max_reviews!r}"
        )
    explanations = list(explanations)
    page_method(explanations, method)  # a bad name fails before anything is written
    per_page = max_reviews or max(len(explanations), 1)
    chunks = [explanations[i : i + per_page] for i in range(0, len(explanations), per_page)]
    paths = page_paths(path, max(len(chunks), 1))
    paths[0].parent.mkdir(parents=True, exist_ok=True)
    for page, (chunk, out) in enumerate(zip(chunks or [[]], paths, strict=True), 1):
        navigation = _navigation(page, paths, len(explanations), per_page)
        out.write_text(
            _page(
                chunk,
                title,
                first=(page - 1) * per_page + 1,
                navigation=navigation,
                method=method,
            ),
            encoding="utf-8",
        )
    return paths[0]
