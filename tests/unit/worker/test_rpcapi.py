"""Which retry rows can be cast, and what the cast carries."""

import json

import pytest

from tests import fakes
from worker import rpcapi


@pytest.fixture
def client():
    return fakes.RecordingRPCClient()


def _parse(client, task, args, kwargs):
    return rpcapi.WorkerAPI(client).parse_retry(task, args, kwargs)


@pytest.mark.parametrize('args,kwargs', [
    (['o-1'], {'generation': 3}),
    (['o-1', 3], {}),
    ([], {'order_id': 'o-1', 'generation': 3}),
])
def test_a_row_whose_arguments_bind_names_its_step(client, args, kwargs):
    step = _parse(client, 'check_certificate_status', json.dumps(args),
                  json.dumps(kwargs))
    assert step == rpcapi.Step(step='check_certificate_status',
                               order_id='o-1', generation=3)
    assert client.casts == []       # parsing validates, casting is later


def test_any_step_name_parses_the_database_checks_it_exists(client):
    # The step's existence is the join on order_steps, not a list here:
    # an order type may declare any step.
    step = _parse(client, 'check_caa', '["o-1"]', '{"generation": 0}')
    assert step == rpcapi.Step('check_caa', 'o-1', 0)


def test_steps_go_in_one_message_of_the_version_that_has_run_steps(client):
    api = rpcapi.WorkerAPI(client)
    api.run_steps([rpcapi.Step('check_certificate_status', 'o-1', 3),
                   rpcapi.Step('process_type_order', 'o-2', 0)])
    assert client.messages == [(
        'run_steps', '1.1',
        {'steps': [['check_certificate_status', 'o-1', 3],
                   ['process_type_order', 'o-2', 0]]})]


@pytest.mark.parametrize('task,args,kwargs,reason', [
    ('process_type_order', '[not json', '{}', 'retry_args is not valid JSON'),
    ('process_type_order', '["o-1"]', 'nul', 'retry_kwargs is not valid'),
    ('process_type_order', '{"a": 1}', '{}', 'retry_args is a JSON dict'),
    ('process_type_order', '["o-1"]', '[1]', 'retry_kwargs is a JSON list'),
    ('process_type_order', '["o-1"]', '{"colour": 1}', 'do not fit'),
    ('process_type_order', '["o-1", 1, 2]', '{}', 'do not fit'),
    ('process_type_order', '["o-1", 1]', '{"generation": 1}', 'do not fit'),
    ('process_type_order', '["o-1"]', '{}', 'do not fit'),
    ('process_type_order', '[]', '{}', 'do not fit'),
    ('process_type_order', '[7]', '{"generation": 0}', 'wrong types'),
    ('process_type_order', '["o-1"]', '{"generation": "0"}', 'wrong types'),
    ('process_type_order', '["o-1"]', '{"generation": true}', 'wrong types'),
    ('process_type_order', '["o-1"]', '{"generation": -1}', 'wrong types'),
    ('process_type_order', '["o-1"]', '{"generation": 1.0}', 'wrong types'),
    ('process_type_order', '[null]', '{"generation": 1}', 'wrong types'),
    ('process_type_order', '["o-1"]', '{"generation": %d}' % 2 ** 63,
     'wrong types'),
])
def test_uncastable_rows_are_refused_with_a_reason(client, task, args,
                                                   kwargs, reason):
    with pytest.raises(rpcapi.InvalidRetry, match=reason):
        _parse(client, task, args, kwargs)
    assert client.casts == []
