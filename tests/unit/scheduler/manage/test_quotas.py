"""``barbican-retry-manage quota …`` on a real SQLite database."""

import json


def _json(completed):
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def test_set_show_list_and_delete_an_override(operator):
    assert _json(operator.manage('quota', 'show', 'p1', '-f', 'json')) == {
        'project_id': 'p1', 'pending_orders': -1, 'override': None,
        'default': -1}
    assert _json(operator.manage('quota', 'set', 'p1', '--pending-orders',
                                 '5', '-f', 'json'))['override'] == 5
    assert [row['project_id'] for row in _json(
        operator.manage('quota', 'list', '-f', 'json'))] == ['p1']
    assert _json(operator.manage('quota', 'delete', 'p1', '-f', 'json'))[
        'pending_orders'] == -1
    assert _json(operator.manage('quota', 'list', '-f', 'json')) == []


def test_an_override_out_of_bounds_is_one_line_and_writes_nothing(
        operator):
    refused = operator.manage('quota', 'set', 'p1', '--pending-orders',
                              '-5')
    assert refused.returncode != 0
    assert 'pending_orders' in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert _json(operator.manage('quota', 'list', '-f', 'json')) == []
