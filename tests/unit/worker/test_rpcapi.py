"""Which retry rows can be cast, and what the cast carries."""

import collections
import json

import pytest

from tests import config
from tests import fakes
from worker import context
from worker.notifications import events
from worker import rpcapi
from worker import values

IDS = values.RequestIds('req-order', 'req-global')


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
    assert step == values.StepRef(step='check_certificate_status',
                                  order_id='o-1', generation=3)
    assert client.casts == []       # parsing validates, casting is later


def test_any_step_name_parses_the_database_checks_it_exists(client):
    # The step's existence is the join on order_steps, not a list here:
    # an order type may declare any step.
    step = _parse(client, 'check_caa', '["o-1"]', '{"generation": 0}')
    assert step == values.StepRef('check_caa', 'o-1', 0)


def test_steps_go_in_one_message_of_the_version_that_has_run_steps(client):
    api = rpcapi.WorkerAPI(client)
    api.run_steps([values.StepRef('check_certificate_status', 'o-1', 3),
                   values.StepRef('process_type_order', 'o-2', 0)])
    assert client.messages == [(
        'run_steps', '1.1',
        {'steps': [['check_certificate_status', 'o-1', 3],
                   ['process_type_order', 'o-2', 0]]})]


def test_the_request_ids_go_in_the_context_and_the_steps_unchanged(client):
    sender = context.for_ids(values.RequestIds('req-api', 'req-caller'))
    rpcapi.WorkerAPI(client).run_steps(
        [values.StepRef('check_certificate_status', 'o-1', 3, IDS),
         values.StepRef('process_type_order', 'o-2', 0)], context=sender)

    # The steps as a worker of the previous release reads them.
    [(_, _, kwargs)] = client.messages
    assert kwargs == {'steps': [['check_certificate_status', 'o-1', 3],
                                ['process_type_order', 'o-2', 0]]}
    [sent] = client.contexts
    assert (sent['request_id'], sent['global_request_id']) == (
        'req-api', 'req-caller')
    assert sent['orders'] == {'o-1': ['req-order', 'req-global']}


def test_a_cast_without_a_sender_makes_up_no_request_id(client):
    api = rpcapi.WorkerAPI(client)
    api.run_steps([values.StepRef('check_caa', 'o-1', 0)])
    api.run_steps([values.StepRef('check_caa', 'o-1', 0, IDS)])
    first, second = client.contexts
    assert first == {}
    assert second == {'orders': {'o-1': list(IDS)}}


@pytest.mark.parametrize('ids,kwargs', [
    (None, {'generation': 3}),
    (IDS, {'generation': 3, 'request_id': 'req-order',
           'global_request_id': 'req-global'}),
    (values.RequestIds('req-order', None),
     {'generation': 3, 'request_id': 'req-order'}),
])
def test_a_retry_row_carries_its_orders_request_ids(client, ids, kwargs):
    step = values.StepRef('check_caa', 'o-1', 3, ids)
    args, written = rpcapi.retry_arguments(step)
    assert (args, written) == (['o-1'], kwargs)
    assert _parse(client, 'check_caa', json.dumps(args),
                  json.dumps(written)) == step


def test_a_row_written_before_request_ids_parses_without_them(client):
    step = _parse(client, 'check_caa', '["o-1"]', '{"generation": 0}')
    assert step.request is None


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
    ('process_type_order', '["o-1"]', '{"generation": 1, "request_id": 7}',
     'wrong types'),
    ('process_type_order', '["o-1"]',
     '{"generation": 1, "global_request_id": ["req-1"]}', 'wrong types'),
    ('process_type_order', '["o-1", 1, "req-1"]', '{}', 'do not fit'),
    ('process_type_order', '["o-1"]',
     '{"generation": 1, "request_ids": "req-1"}', 'do not fit'),
])
def test_uncastable_rows_are_refused_with_a_reason(client, task, args,
                                                   kwargs, reason):
    with pytest.raises(rpcapi.InvalidRetry, match=reason):
        _parse(client, task, args, kwargs)
    assert client.casts == []


# Topics per order type: fake clients, one per topic.

SLOW = 'slow_topic'


@pytest.fixture
def clients():
    return collections.defaultdict(fakes.RecordingRPCClient)


def _routed(clients, built=None, **overrides):
    """A WorkerAPI over ``clients`` (by topic), fanout on ``SLOW``."""
    conf = config.make_conf(**dict({'order_type:fanout.topic': SLOW},
                                   **overrides))

    def client_of(topic):
        if built is not None:
            built.append(topic)
        return clients[topic]
    return rpcapi.WorkerAPI(clients[conf.worker.topic],
                            rpcapi.Topics(conf, client_of))


def _sent(client):
    """The steps of each message ``client`` sent."""
    return [kwargs['steps'] for _, _, kwargs in client.messages]


def test_each_step_goes_to_its_types_topic_in_one_message_per_topic(
        clients):
    _routed(clients).run_steps([
        values.StepRef('check_caa', 'o-1', 0, IDS, 'fanout'),
        values.StepRef('process_type_order', 'o-2', 0, None, 'certificate'),
        values.StepRef('check_key', 'o-1', 0, IDS, 'fanout'),
        # A delivery goes to [worker] topic whatever its order's type.
        values.StepRef('notify:3', 'o-1', 2, IDS, 'fanout'),
        # A type not installed here, and a step of no known type.
        values.StepRef('run', 'o-3', 0, None, 'not_installed'),
        values.StepRef('check_caa', 'o-4', 0)])

    assert set(clients) == {'barbican_retry_worker', SLOW}
    assert _sent(clients[SLOW]) == [[['check_caa', 'o-1', 0],
                                     ['check_key', 'o-1', 0]]]
    assert _sent(clients['barbican_retry_worker']) == [[
        ['process_type_order', 'o-2', 0], ['notify:3', 'o-1', 2],
        ['run', 'o-3', 0], ['check_caa', 'o-4', 0]]]
    # Each message carries the request ids of its own steps' orders.
    assert clients[SLOW].contexts == [{'orders': {'o-1': list(IDS)}}]


def test_a_topics_client_is_built_once(clients):
    built = []
    api = _routed(clients, built)
    for order_id in ('o-1', 'o-2', 'o-3'):
        api.run_steps([values.StepRef('check_caa', order_id, 0, None,
                                      'fanout')])
    assert built == [SLOW]
    assert len(clients[SLOW].messages) == 3


def test_a_type_without_a_topic_of_its_own_goes_to_the_workers_topic(
        clients):
    api = _routed(clients, **{'order_type:fanout.topic': None})
    api.run_steps([values.StepRef('check_caa', 'o-1', 0, None, 'fanout')])
    assert list(clients) == ['barbican_retry_worker']
    # Nor does a type whose topic is [worker] topic's name make a client.
    api = _routed(clients, **{'order_type:fanout.topic':
                              'barbican_retry_worker'})
    assert api.topic(values.StepRef('check_caa', 'o-1', 0, None,
                                    'fanout')) is None


def test_a_failed_topic_does_not_keep_the_others_messages(clients):
    clients[SLOW] = fakes.RecordingRPCClient(fail=lambda *_: True)
    with pytest.raises(fakes.CastFailed):
        _routed(clients).run_steps([
            values.StepRef('check_caa', 'o-1', 0, None, 'fanout'),
            values.StepRef('process_type_order', 'o-2', 0, None,
                           'certificate')])
    assert _sent(clients['barbican_retry_worker']) == [
        [['process_type_order', 'o-2', 0]]]


def test_without_topics_every_step_goes_to_the_one_client(client):
    api = rpcapi.WorkerAPI(client)
    step = values.StepRef('check_caa', 'o-1', 0, None, 'fanout')
    api.run_steps([step])
    assert api.topic(step) is None and len(client.messages) == 1


def test_the_old_names_of_the_ground_floor_values_still_work():
    # Deprecated for one release: code that names them at their old
    # homes gets the same values.
    assert rpcapi.Step is values.StepRef
    assert rpcapi.Step('a', 'o-1', 2).wire() == ['a', 'o-1', 2]
    assert events.Event is values.Event
    assert context.RequestIds is values.RequestIds
