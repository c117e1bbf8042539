"""Every public layer is registered for `.keras` loading under the "hatt" package."""

import keras
import pytest

import hatt.layers


@pytest.mark.parametrize("name", hatt.layers.__all__)
def test_public_layer_is_registered(name):
    cls = getattr(hatt.layers, name)
    assert keras.saving.get_registered_name(cls) == f"hatt>{name}"
    assert keras.saving.get_registered_object(f"hatt>{name}") is cls


def test_all_lists_exactly_the_public_classes():
    public = {
        n
        for n in dir(hatt.layers)
        if not n.startswith("_") and isinstance(getattr(hatt.layers, n), type)
    }
    assert set(hatt.layers.__all__) == public
