"""Which retry rows can be cast, and what the cast carries."""

import json

import pytest

from tests import fakes
from worker import rpcapi


@pytest.fixture
def client():
    return fakes.RecordingRPCClient()


def _bind(client, task, args, kwargs):
    return rpcapi.WorkerAPI(client).bind_retry(task, args, kwargs)


def test_retryable_row_is_cast_with_keyword_arguments(client):
    cast = _bind(client, 'check_certificate_status', json.dumps(['o-1']),
                 json.dumps({'generation': 3}))
    assert client.casts == []       # binding validates, casting is later
    cast()
    assert client.casts == [('check_certificate_status',
                             {'order_id': 'o-1', 'generation': 3})]


@pytest.mark.parametrize('task,args,kwargs,reason', [
    ('delete_everything', '["o-1"]', '{}', 'not retryable'),
    ('bind_retry', '["o-1"]', '{}', 'not retryable'),
    ('_cast', '["o-1"]', '{}', 'not retryable'),
    ('process_type_order', '[not json', '{}', 'retry_args is not valid JSON'),
    ('process_type_order', '["o-1"]', 'nul', 'retry_kwargs is not valid'),
    ('process_type_order', '{"a": 1}', '{}', 'retry_args is a JSON dict'),
    ('process_type_order', '["o-1"]', '[1]', 'retry_kwargs is a JSON list'),
    ('process_type_order', '["o-1"]', '{"colour": 1}', 'do not fit'),
    ('process_type_order', '["o-1", 1, 2]', '{}', 'do not fit'),
    ('process_type_order', '[]', '{}', 'do not fit'),
])
def test_uncastable_rows_are_refused_with_a_reason(client, task, args,
                                                   kwargs, reason):
    with pytest.raises(rpcapi.InvalidRetry, match=reason):
        _bind(client, task, args, kwargs)
    assert client.casts == []


def test_every_retryable_method_exists_on_the_client():
    for name in rpcapi.RETRYABLE_METHODS:
        assert callable(getattr(rpcapi.WorkerAPI, name))
