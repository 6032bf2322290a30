"""The installed types' ``meta_schema``: every metadata in use still passes.

The metadata below are those the demo, the README, the operations guide,
the functional tests and the chaos harness create orders with; a schema
that refused one of them would break that use.
"""

import json

import pytest

from tests.chaos import run as chaos
from tests import plugin
from worker import order_types
from worker.order_types import base
from worker.order_types import meta

RECORDING_FANOUT = base.check('recording_fanout', plugin.RecordingFanout)
RECORDING_LIMITED = base.check('recording_limited', plugin.RecordingLimited)

IN_USE = {
    'certificate': [
        {}, {'unavailable_attempts': 1}, {'unavailable_attempts': 2},
        {'unavailable_attempts': 99}, {'hold_seconds': 60},
        {'hold_seconds': 4},
        # Read by the configured plugin, not by the type.
        {'cn': 'example.org'}, {'domain': 'example.org'},
    ],
    'fanout': [{}, {'unavailable_attempts': 1}, {'polls': 2}],
    'recording_fanout': [
        {'hold_seconds': 3, 'hold_step': 'check_domains',
         'unavailable_attempts': 1},
        {'hold_seconds': 60, 'unavailable_attempts': 1},
        {'unavailable_attempts': 1, 'hold_seconds': 30,
         'hold_step': 'check_caa'},
        {'hold_seconds': 5}, {'unavailable_attempts': 3},
    ],
}


def _workflow(type_name):
    if type_name == 'recording_fanout':
        return RECORDING_FANOUT
    if type_name == chaos.LIMITED_TYPE:
        return RECORDING_LIMITED
    return order_types.get(type_name)


def _chaos_metas():
    """Each (type, metadata) of a chaos run's waves, once."""
    found = {(wave_type or type_name, text)
             for kind, type_name in chaos.ORDER_TYPES.items()
             for _, text, wave_type in chaos._waves(100, 600, kind)}
    return [(type_name, json.loads(text))
            for type_name, text in sorted(found)]


@pytest.mark.parametrize('type_name,meta_value', [
    (type_name, meta_value)
    for type_name, metas in IN_USE.items() for meta_value in metas
] + _chaos_metas())
def test_the_metadata_in_use_passes(type_name, meta_value):
    meta.validate_meta(_workflow(type_name), meta_value)


@pytest.mark.parametrize('type_name,meta_value,path,rule', [
    ('certificate', {'unavailable_attempts': 'x'}, '$.unavailable_attempts',
     'type'),
    ('certificate', {'unavailable_attempts': 1.5}, '$.unavailable_attempts',
     'type'),
    ('certificate', {'unavailable_attempts': -1}, '$.unavailable_attempts',
     'minimum'),
    ('certificate', {'issued_on_request': 'yes'}, '$.issued_on_request',
     'const'),
    # An output of the first step: as input, it would skip the check.
    ('certificate', {'issued_on_request': True}, '$.issued_on_request',
     'const'),
    ('fanout', {'polls': '2'}, '$.polls', 'type'),
    ('fanout', {'unavailable_attempts': -3}, '$.unavailable_attempts',
     'minimum'),
    ('fanout', {'poll': 2}, '$', 'additionalProperties'),
    ('fanout', {'hold_seconds': 2}, '$', 'additionalProperties'),
    ('recording_fanout', {'hold_step': 'sign'}, '$.hold_step', 'enum'),
    ('recording_fanout', {'hold_seconds': -1}, '$.hold_seconds', 'minimum'),
])
def test_a_wrong_value_of_a_known_key_is_refused(type_name, meta_value,
                                                 path, rule):
    with pytest.raises(meta.InvalidMeta) as caught:
        meta.validate_meta(_workflow(type_name), meta_value)
    assert (caught.value.path, caught.value.rule) == (path, rule)


def test_the_recording_fanout_extends_the_fanouts_schema():
    fanout = order_types.get('fanout').meta_schema
    recording = RECORDING_FANOUT.meta_schema
    assert set(recording['properties']) == set(fanout['properties']) | {
        'hold_seconds', 'hold_step', 'extend_lease_seconds', 'kill_worker',
        'fail_step', 'fail_runs', 'release_file'}
    assert recording['additionalProperties'] is False
    assert 'hold_seconds' not in fanout['properties']
