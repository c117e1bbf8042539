"""The REST dialect without a server: URLs, bodies, per-review rows, response shapes."""

import dataclasses

import numpy as np
import pytest

from hatt.inspect.explanation import Explanation
from hatt.serve import api


@pytest.mark.parametrize(
    "rest, expected",
    [
        ("cnn", ("cnn", None, "status")),
        ("cnn/", ("cnn", None, "status")),
        ("cnn/metadata", ("cnn", None, "metadata")),
        ("cnn:predict", ("cnn", None, "predict")),
        ("han-2.v1/versions/12:explain", ("han-2.v1", 12, "explain")),
        ("cnn/versions/3", ("cnn", 3, "status")),
        ("cnn/versions/3/metadata", ("cnn", 3, "metadata")),
    ],
)
def test_routes_parse_as_tf_serving_writes_them(rest, expected):
    assert api.parse_route(rest) == expected


@pytest.mark.parametrize(
    "rest, status, words",
    [
        ("cnn:classify", 404, ":classify"),
        ("cnn/versions/x:predict", 400, "'x'"),
        ("cnn/labels/stable:predict", 404, "no such path"),
        ("cnn/extra/path", 404, "no such path"),
    ],
)
def test_bad_routes_are_refused_with_the_reason(rest, status, words):
    with pytest.raises(api.ApiError) as caught:
        api.parse_route(rest)
    assert caught.value.status == status and words in caught.value.message


def test_texts_in_both_formats():
    row = {"instances": ["a", {"text": "b"}, ""]}
    assert api.parse_texts(row, 8) == (["a", "b", ""], False)
    assert api.parse_texts({"inputs": {"text": ["a", "b"]}}, 8) == (["a", "b"], True)
    assert api.parse_texts({"inputs": ["a"]}, 8) == (["a"], True)
    assert api.parse_texts({"instances": []}, 8) == ([], False)


@pytest.mark.parametrize(
    "body, status, words",
    [
        ({}, 400, "Received: neither"),
        ({"instances": ["a"], "inputs": ["a"]}, 400, "Received: both"),
        ({"instances": "a review"}, 400, "Expected instances to be a list"),
        ({"instances": ["a", 3]}, 400, "instances[1]=3"),
        ({"instances": [{"text": 1}]}, 400, 'instances[0]={"text": 1}'),
        ({"instances": [{"text": "a", "x": 1}]}, 400, "instances[0]"),
        ({"inputs": {"text": "a"}}, 400, "Expected inputs.text to be a list"),
        ({"inputs": {"text": ["a", None]}}, 400, "inputs.text[1]=null"),
        ({"inputs": [{"text": "a"}]}, 400, "Expected inputs[0] to be a string"),
        ({"inputs": {"review": ["a"]}}, 400, "keys ['review']"),
        ({"instances": ["a"] * 9}, 413, "at most 8 texts"),
    ],
)
def test_bad_bodies_name_the_field(body, status, words):
    with pytest.raises(api.ApiError) as caught:
        api.parse_texts(body, 8)
    assert caught.value.status == status
    assert words in caught.value.message


@pytest.mark.parametrize(
    "raw, words",
    [
        (b"{", "Malformed JSON body"),
        (b"[1]", "a JSON array"),
        (b"null", "Received: JSON null"),
        (b'{"a": ' + b"9" * 5000 + b"}", "over 4,300 digits"),
        (b"\xff\xfe", "Malformed JSON"),
    ],
)
def test_bodies_must_be_json_objects(raw, words):
    with pytest.raises(api.ApiError) as caught:
        api.parse_json(raw)
    assert caught.value.status == 400 and words in caught.value.message


def test_signature_and_method_choices():
    assert api.parse_signature({}) == "predict"
    assert api.parse_signature({"signature_name": ""}) == "predict"
    assert api.parse_signature({"signature_name": "serving_default"}) == "serving_default"
    with pytest.raises(api.ApiError, match="signature_name='classify'"):
        api.parse_signature({"signature_name": "classify"})
    with pytest.raises(api.ApiError, match=r"method to be one of \['saliency'\]"):
        api.parse_choice({"method": "attention"}, "method", ("saliency",), "saliency")


def test_rows_drop_the_padding_of_other_reviews():
    # A HAN-shaped batch padded to 3 sentences of 4 words; review 1 has 1 sentence of 2 words.
    tokens = np.full((2, 3, 4), "", dtype=object)
    tokens[0, :3, :4] = "w"
    tokens[1, 0, :2] = ["good", "film"]
    word = np.where(tokens != "", 0.5, 0.0).astype(np.float32)
    sentence = np.array([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]], np.float32)
    outputs = {
        "tokens": tokens,
        "word_attention": word,
        "sentence_attention": sentence,
        "probabilities": np.array([[0.1, 0.9], [0.6, 0.4]], np.float32),
        "label": np.array(["positive", "negative"], dtype=object),
    }
    first, second = api.rows_of(outputs)
    assert first["tokens"].shape == (3, 4) and first["sentence_attention"].shape == (3,)
    assert second["tokens"].tolist() == [["good", "film"]]
    assert second["word_attention"].tolist() == [[0.5, 0.5]]
    assert second["sentence_attention"].tolist() == [1.0]
    assert second["label"] == "negative"
    np.testing.assert_array_equal(second["probabilities"], np.float32([0.6, 0.4]))
    # An empty review keeps one padding step per axis, as the model returns it alone.
    tokens[1] = ""
    assert api.rows_of({"tokens": tokens})[1]["tokens"].shape == (1, 1)


def test_responses_in_row_and_columnar_shapes():
    rows = api.rows_of(
        {
            "tokens": np.array([["a", "b"], ["c", ""]], dtype=object),
            "probability": np.array([0.25, 0.5], np.float32),
        }
    )
    assert api.predict_response(rows, columnar=False) == {
        "predictions": [
            {"tokens": ["a", "b"], "probability": 0.25},
            {"tokens": ["c"], "probability": 0.5},
        ]
    }
    assert api.predict_response(rows, columnar=True) == {
        "outputs": {"tokens": [["a", "b"], ["c", ""]], "probability": [0.25, 0.5]}
    }
    assert api.predict_response([], columnar=False) == {"predictions": []}


def test_probability_is_named_by_its_class_in_both_formats_and_in_explanations():
    # issue 64, item 5: a label of the first class beside the second class's probability
    rows = api.rows_of({"probability": np.array([0.25], np.float32)})
    names = ("unhappy", "happy")
    (row,) = api.predict_response(rows, columnar=False, class_names=names)["predictions"]
    assert row == {"probability": 0.25, "probability_of": "happy"}
    columns = api.predict_response(rows, columnar=True, class_names=names)["outputs"]
    assert columns == {"probability": [0.25], "probability_of": ["happy"]}
    # more classes have no `probability`, and so no name for it
    three = api.rows_of({"probabilities": np.array([[0.2, 0.3, 0.5]], np.float32)})
    (row,) = api.predict_response(three, False, ("a", "b", "c"))["predictions"]
    assert "probability_of" not in row
    seen = Explanation(
        text="meh", family="cnn", score_kind="saliency", probability=0.25,
        sentences=[["meh"]], word_weights=[[1.0]], class_names=names,
    )  # fmt: skip
    assert api.prediction_of(seen) == {
        "label": "unhappy",
        "probabilities": [0.75, 0.25],
        "probability": 0.25,
        "probability_of": "happy",
    }
    assert seen.to_dict()["probability_of"] == "happy"  # hatt inspect --json names it too
    three = dataclasses.replace(seen, class_names=("a", "b", "c"), probabilities=[0.2, 0.5, 0.3])
    assert three.to_dict()["probability_of"] == "b"  # more classes: the predicted one's


@pytest.mark.parametrize(
    "kind,body",
    [
        ("explain", {"instances": ["great"], "steps": -1}),
        ("explain", {"instances": ["great"], "label": "zzz"}),
        ("predict", {"instances": ["great"], "method": "total"}),
        ("ui_explain", {"model": "m", "text": "great", "steps": 2}),
    ],
)
def test_a_field_a_request_cannot_take_is_refused_not_ignored(kind, body):
    # issue 63, second pass: ':explain' answered {"steps": -1} as if it were absent
    with pytest.raises(api.ApiError, match=r"Unknown field\(s\) \[") as raised:
        api.check_fields(body, kind)
    assert raised.value.status == 400
    api.check_fields({k: v for k, v in body.items() if k in api.FIELDS[kind]}, kind)
