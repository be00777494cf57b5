"""A layered map reads as the dict the same edits make, through chained layers and folds."""

from __future__ import annotations

import random

import pytest

from vaultsearch.search import layered
from vaultsearch.search.layered import Layered


def _same(m: object, want: dict[int, str]) -> None:
    assert isinstance(m, (dict, Layered))
    assert list(m) == list(want)
    assert list(m.items()) == list(want.items())
    assert list(m.values()) == list(want.values())
    assert len(m) == len(want) == len(m.items())
    assert m == want
    for key in range(-1, 130):
        assert (key in m) == (key in want)
        assert m.get(key, "none") == want.get(key, "none")
        if key in want:
            assert m[key] == want[key]
        else:
            with pytest.raises(KeyError):
                m[key]


@pytest.mark.parametrize("seed", range(8))
def test_layers_read_as_the_dict_the_same_edits_make(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(layered, "FOLD_AT_LEAST", 6)  # fold now and then in a small map
    rng = random.Random(seed)
    want = {k: f"v{k}" for k in rng.sample(range(100), 60)}
    current: object = dict(want)
    folds = 0
    for step in range(40):
        before = list(current.items())  # type: ignore[attr-defined]
        layer = Layered.over(current)  # type: ignore[arg-type]
        for _ in range(rng.randint(1, 6)):
            key = rng.randrange(128)
            if rng.random() < 0.4:
                layer.drop(key)
                want.pop(key, None)
            else:
                value = f"v{key}.{step}"
                layer.put(key, value)
                want[key] = value
        assert list(current.items()) == before  # type: ignore[attr-defined]  # a search may still read it
        current = layer.settled()
        folds += type(current) is dict
        _same(current, want)
    assert folds > 0


def test_a_key_deleted_and_set_again_comes_last_as_in_a_dict() -> None:
    layer = Layered.over({1: "a", 2: "b", 3: "c"})
    layer.drop(1)
    layer.put(1, "again")
    layer.put(2, "in place")
    assert list(layer.items()) == [(2, "in place"), (3, "c"), (1, "again")]
