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


def test_check_text_allows_control_characters_only_when_asked():
    assert inputs.check_text('a\tb', 'reason', 10,
                             allow_controls=True) == 'a\tb'
    with pytest.raises(inputs.BadCharacters):
        inputs.check_text('a\tb', 'reason', 10)
    with pytest.raises(inputs.BadCharacters):
        inputs.check_text('a\0b', 'reason', 10, allow_controls=True)


@pytest.mark.parametrize('project_id, all_projects, scope', [
    ('p', False, 'p'), (None, True, None)])
def test_scope_is_a_project_or_every_project(
        project_id, all_projects, scope):
    assert inputs.scope(project_id, all_projects) == scope


@pytest.mark.parametrize('project_id, all_projects, error', [
    (None, False, inputs.BadScope), ('p', True, inputs.BadScope),
    ('p', 1, inputs.BadScope), ('p' * 65, False, inputs.TooLarge),
    ('p\0', False, inputs.BadCharacters)])
def test_scope_is_never_neither_nor_both(project_id, all_projects, error):
    with pytest.raises(error):
        inputs.scope(project_id, all_projects)
