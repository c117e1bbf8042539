"""The explanation methods, registered once in hatt.names (no TensorFlow needed to list them)."""

import ast
import sys
from pathlib import Path

import pytest

from hatt import names
from hatt.inspect import methods


def test_the_registry_gives_the_names_kinds_and_labels_in_order():
    assert names.METHODS == (
        "attention",
        "total",
        "gradient_x_input",
        "integrated_gradients",
        "ngram",
    )
    assert names.SIGNED_METHODS == names.METHODS[1:]
    assert names.explanation_method("integrated_gradients").label == "integrated gradients"
    assert names.explanation_method("total").page_label == "total (whole prediction)"
    assert names.explanation_method("ngram").page_label == "n-gram channel"
    with pytest.raises(ValueError, match="method='shap'"):
        names.explanation_method("shap")


def test_a_models_methods_follow_what_it_has():
    assert names.model_methods("attention", has_channel=True) == names.METHODS
    assert names.model_methods("saliency", has_channel=False) == (
        "total",
        "gradient_x_input",
        "integrated_gradients",
    )


def test_inspect_reads_its_labels_and_kinds_from_the_registry():
    for method in names.EXPLANATION_METHODS:
        assert methods.method_label(method.name) == method.label
        assert methods.is_signed(method.name) == method.signed
    assert methods.method_label("saliency") == "saliency"


def test_the_names_import_nothing_but_the_standard_library():
    """`hatt --help` lists the methods from here without TensorFlow (hatt._startup)."""
    tree = ast.parse(Path(names.__file__).read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module)])
    }
    assert imported <= set(sys.stdlib_module_names)
