"""The page at ``/``: paste a review, see what one or two models make of it.

One HTML document with its CSS inline and one script from the same server
(``/static/page.js``): nothing from elsewhere, so it works offline. The
script fills the model choices from ``/ui/models``, posts the review to
``/ui/explain`` once per chosen model, and puts the card it gets back into
that model's column. The cards are rendered on the server by
:func:`hatt.inspect.html.review_html`, the renderer of ``hatt inspect
--html``, which escapes every word and the raw text; everything else the
script writes goes through ``textContent``. The Content-Security-Policy
forbids inline scripts and other origins, so markup that slipped through
could still not run.

Each model's method choice opens on ``"total"`` (each word's contribution to
the whole prediction: blue for the predicted class, red against it) when the
model has it. A model with warnings (a deep part with a negative weight in
the mix, or below the n-gram channel alone; ``Explanation.warnings``) shows
them in a box on its card. Each card names the model's attention and its
share of weights exactly 0 (`Explanation.attention_line`); with sparse
attention (sparsemax, entmax-1.5) or hard attention, a word of weight exactly
0 is grey and unshaded, never confused with a small weight.
"""

import json

from hatt.inspect.html import CSS as CARD_CSS
from hatt.names import EXPLANATION_METHODS

HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

_PAGE_CSS = """
body { max-width: 84em; margin: 0 auto; padding: .8em 1.2em; }
header h1 { margin: .2em 0; }
header p { margin: .2em 0 .8em 0; color: #57606a; }
label.review-label { display: block; font-weight: 600; margin-bottom: .3em; }
textarea { width: 100%; box-sizing: border-box; min-height: 7em; font: inherit; padding: .5em;
           border: 1px solid #d0d7de; border-radius: 6px; resize: vertical; }
.controls { display: flex; flex-wrap: wrap; gap: .6em 1.2em; align-items: end; margin: .6em 0; }
.controls fieldset { border: 1px solid #d0d7de; border-radius: 6px; padding: .3em .6em;
                     margin: 0; display: flex; flex-wrap: wrap; gap: .4em .8em; }
.controls legend { font-size: .85em; color: #57606a; padding: 0 .3em; }
.controls label { font-size: .9em; }
select, button { font: inherit; padding: .3em .6em; border-radius: 6px;
                 border: 1px solid #d0d7de; background: #f6f8fa; }
button.primary { background: #1f883d; color: #fff; border-color: #1a7f37; font-weight: 600; }
button:disabled { opacity: .6; }
#status { min-height: 1.4em; color: #57606a; margin: .3em 0; }
#status.error, .column .error { color: #cf222e; }
.results { display: grid; grid-template-columns: minmax(0, 1fr); gap: 0 1.5em; }
@media (min-width: 60em) {
  .results.two { grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); }
}
.column .review { margin-top: .5em; }
.words { min-width: 0; overflow-wrap: anywhere; }
@media (max-width: 40em) {
  body { padding: .5em .6em; }
  .controls fieldset { flex: 1 1 100%; }
  .band { flex-basis: 2.6em; }
}
"""

PAGE_HTML = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hatt: what the model looked at</title>
<style>{CARD_CSS}{_PAGE_CSS}</style>
<script src="/static/page.js" defer></script>
</head><body>
<header><h1>hatt: what the model looked at</h1>
<p>Paste a review and see the prediction and the words each model weighed: in the
total view, blue for the predicted class and red against it. Each card names the model's
attention; in its attention view a <span class="zero">grey, unshaded</span> word has weight
exactly 0 (sparse attention).</p></header>
<main>
<form id="form" autocomplete="off">
<label class="review-label" for="review">Review</label>
<textarea id="review" name="review" rows="6" required
 placeholder="A wonderful, moving film. The acting was superb!"></textarea>
<div class="controls">
<fieldset><legend>Left</legend>
<label>Model <select id="model-0" name="model-0"></select></label>
<label>Method <select id="method-0" name="method-0"></select></label></fieldset>
<fieldset><legend>Right (compare)</legend>
<label>Model <select id="model-1" name="model-1"></select></label>
<label>Method <select id="method-1" name="method-1"></select></label></fieldset>
<button type="submit" id="submit" class="primary">Explain</button>
<button type="button" id="sample" hidden>Random IMDB test review</button>
</div>
</form>
<p id="status" role="status" aria-live="polite"></p>
<div id="results" class="results">
<div class="column" id="column-0"></div>
<div class="column" id="column-1" hidden></div>
</div>
</main>
</body></html>
"""

PAGE_JS = r""""use strict";
// hatt serve's page. Cards come from the server (hatt.inspect.html.review_html,
// which escapes every word); everything this script writes uses textContent.
(function () {
  const $ = (id) => document.getElementById(id);
  const COLUMNS = [0, 1];
  let models = [];

  async function getJSON(url, options) {
    const response = await fetch(url, options);
    let body;
    try {
      body = await response.json();
    } catch (error) {
      body = { error: response.status + " " + response.statusText };
    }
    if (!response.ok) {
      throw new Error(body.error || response.statusText);
    }
    return body;
  }

  function option(value, text) {
    const element = document.createElement("option");
    element.value = value;
    element.textContent = text;
    return element;
  }

  // The view each model opens on: the total (deep part + n-gram channel) when it has it.
  const DEFAULT_METHOD = "total";
  const METHOD_LABELS = __METHOD_LABELS__;

  function fillMethods(column) {
    const select = $("method-" + column);
    const model = models.find((m) => m.name === $("model-" + column).value);
    const methods = model ? model.methods : [];
    select.replaceChildren(...methods.map((m) => option(m, METHOD_LABELS[m] || m)));
    if (methods.includes(DEFAULT_METHOD)) {
      select.value = DEFAULT_METHOD;
    }
    select.disabled = !model;
  }

  function setStatus(text, isError) {
    const status = $("status");
    status.textContent = text;
    status.classList.toggle("error", Boolean(isError));
  }

  // The task first: two models of different classes must never look alike.
  function modelLabel(m) {
    const names = m.class_names;
    const shown = names.length > 4 ? names.slice(0, 4).join(", ") + ", ..." : names.join(", ");
    return m.name + ": " + names.length + " classes (" + shown + "), " + m.family +
      ", v" + m.version;
  }

  async function init() {
    const info = await getJSON("/ui/models");
    models = info.models;
    for (const column of COLUMNS) {
      const select = $("model-" + column);
      const choices = models.map((m) => {
        const element = option(m.name, modelLabel(m));
        if (m.corpus) {
          element.title = "trained on " + m.corpus;
        }
        return element;
      });
      if (column === 1) {
        choices.unshift(option("", "none"));
      }
      select.replaceChildren(...choices);
      select.addEventListener("change", () => fillMethods(column));
    }
    $("model-0").value = models[0].name;
    $("model-1").value = models.length > 1 ? models[1].name : "";
    COLUMNS.forEach(fillMethods);
    $("sample").hidden = !info.imdb;
    setStatus(models.length + " model(s) loaded: " + models.map((m) => m.name).join(", "));
  }

  async function explainColumn(column, text) {
    const name = $("model-" + column).value;
    const target = $("column-" + column);
    if (!name) {
      target.replaceChildren();
      target.hidden = true;
      return null;
    }
    target.hidden = false;
    target.setAttribute("aria-busy", "true");
    try {
      const result = await getJSON("/ui/explain", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ model: name, text: text, method: $("method-" + column).value,
                               column: column }),
      });
      target.innerHTML = result.html; // rendered and escaped by hatt.inspect.html
      return result.prediction;
    } catch (error) {
      const message = document.createElement("p");
      message.className = "error";
      message.textContent = name + ": " + error.message;
      target.replaceChildren(message);
      return null;
    } finally {
      target.removeAttribute("aria-busy");
    }
  }

  async function submit(event) {
    event.preventDefault();
    const text = $("review").value;
    const button = $("submit");
    button.disabled = true;
    setStatus("Explaining…");
    const started = performance.now();
    try {
      await Promise.all(COLUMNS.map((column) => explainColumn(column, text)));
      const shown = COLUMNS.filter((column) => !$("column-" + column).hidden).length;
      $("results").classList.toggle("two", shown === 2);
      setStatus("Done in " + Math.round(performance.now() - started) + " ms.");
      document.body.dataset.explained = String(Number(document.body.dataset.explained || 0) + 1);
    } finally {
      button.disabled = false;
    }
  }

  async function sample() {
    setStatus("Loading an IMDB test review…");
    try {
      const review = await getJSON("/ui/imdb-review");
      $("review").value = review.text;
      setStatus("IMDB test review #" + review.index + " (true label: " +
                (review.label === 1 ? "positive" : "negative") + ")");
    } catch (error) {
      setStatus(error.message, true);
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("form").addEventListener("submit", submit);
    $("sample").addEventListener("click", sample);
    init().catch((error) => setStatus("Could not load the models: " + error.message, true));
  });
})();
""".replace(
    "__METHOD_LABELS__",  # each method's label and the part it explains, from the registry
    json.dumps({m.name: m.page_label for m in EXPLANATION_METHODS}, ensure_ascii=False),
)
