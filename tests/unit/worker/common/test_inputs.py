"""The checks of ``worker.common.inputs`` on their own."""

import pytest

from worker.common import inputs


def test_an_oversize_string_in_meta_is_refused_before_it_is_scanned(
        monkeypatch):
    # Refusing a string by its length must not cost a scan of each of its
    # characters: a caller could repeat a 100 MB request at will.
    scanned = []
    real = inputs.first_forbidden

    def counting(text, *arguments, **keywords):
        scanned.append(len(text))
        return real(text, *arguments, **keywords)

    monkeypatch.setattr(inputs, 'first_forbidden', counting)
    with pytest.raises(inputs.TooLarge) as raised:
        inputs.check_meta({'key': 'x' * 100_000}, 4096, 5)
    assert raised.value.field == 'meta'
    assert sum(scanned) < 4096

    scanned.clear()
    inputs.check_meta({'key': 'x' * 100}, 4096, 5)
    assert sum(scanned) == len('key') + 100
