"""The metadata gate: ``validate_meta`` and the refusals it gives."""

import pytest

from worker.order_types import base
from worker.order_types import meta

SCHEMA = {
    'type': 'object',
    'properties': {
        'attempts': {'type': 'integer', 'minimum': 0},
        'mode': {'enum': ['fast', 'slow']},
        'checks': {'type': 'array', 'items': {'type': 'string'}},
        'plugin': {
            'type': 'object',
            'properties': {'plugin_name': {'type': 'string'}},
            'required': ['plugin_name'],
        },
        'odd key': {'type': 'boolean'},
    },
    'required': ['mode'],
    'additionalProperties': False,
}


def _workflow(schema=SCHEMA):
    class Demo(base.OrderType):
        steps = (base.Step('issue'),)
        meta_schema = schema

        def issue(self, order):
            return None

    return base.check('demo', Demo)


def _refusal(meta_value, schema=SCHEMA):
    with pytest.raises(meta.InvalidMeta) as caught:
        meta.validate_meta(_workflow(schema), meta_value)
    return caught.value


def test_a_valid_meta_passes():
    meta.validate_meta(_workflow(), {
        'attempts': 2, 'mode': 'fast', 'checks': ['caa', 'key'],
        'plugin': {'plugin_name': 'simple'}, 'odd key': True})


@pytest.mark.parametrize('meta_value,path,rule,reason', [
    ({'mode': 'fast', 'attempts': 'x'}, '$.attempts', 'type',
     "'x' is not of type 'integer'"),
    ({'mode': 'fast', 'attempts': -1}, '$.attempts', 'minimum',
     '-1 is less than the minimum of 0'),
    ({'mode': 'quick'}, '$.mode', 'enum',
     "'quick' is not one of ['fast', 'slow']"),
    ({}, '$', 'required', "'mode' is a required property"),
    ({'mode': 'fast', 'extra': 1}, '$', 'additionalProperties',
     "Additional properties are not allowed ('extra' was unexpected)"),
    ({'mode': 'fast', 'checks': ['caa', 'key', 3]}, '$.checks[2]', 'type',
     "3 is not of type 'string'"),
    ({'mode': 'fast', 'plugin': {}}, '$.plugin', 'required',
     "'plugin_name' is a required property"),
    ({'mode': 'fast', 'plugin': {'plugin_name': 7}}, '$.plugin.plugin_name',
     'type', "7 is not of type 'string'"),
    ({'mode': 'fast', 'odd key': 'yes'}, '$["odd key"]', 'type',
     "'yes' is not of type 'boolean'"),
])
def test_a_violation_names_its_path_and_rule(meta_value, path, rule,
                                             reason):
    refused = _refusal(meta_value)

    assert (refused.path, refused.rule, refused.reason) == (path, rule,
                                                            reason)
    assert str(refused) == 'meta is invalid at %s: %s (rule: %s)' % (
        path, reason, rule)
    assert isinstance(refused, ValueError)


def test_a_boolean_is_no_integer():
    assert _refusal({'mode': 'fast', 'attempts': True}).rule == 'type'


def test_of_several_violations_the_most_relevant_is_reported():
    # best_match prefers the shallower error: the unknown key at the top
    # over the wrong item deep in a list.
    refused = _refusal({'mode': 'fast', 'checks': [1], 'extra': 1})
    assert (refused.path, refused.rule) == ('$', 'additionalProperties')


@pytest.mark.parametrize('schema', [SCHEMA, None])
@pytest.mark.parametrize('meta_value,shown', [
    ([1], '[1]'), ('{}', "'{}'"), (None, 'None'), (3, '3'),
])
def test_meta_that_is_not_an_object_is_refused_whatever_the_type(
        schema, meta_value, shown):
    refused = _refusal(meta_value, schema)
    assert (refused.path, refused.rule) == ('$', 'type')
    assert str(refused) == ("meta is invalid at $: %s is not of type "
                            "'object' (rule: type)" % shown)


def test_a_type_with_no_schema_accepts_any_object():
    workflow = _workflow(None)
    assert workflow.meta_schema is None
    meta.validate_meta(workflow, {})
    meta.validate_meta(workflow, {'anything': [1, {'at': 'all'}]})


def test_the_validator_is_compiled_once_per_workflow(monkeypatch):
    workflow = _workflow()
    meta.validate_meta(workflow, {'mode': 'fast'})
    compiled = []
    monkeypatch.setattr(meta, 'VALIDATOR',
                        lambda schema: compiled.append(schema))

    meta.validate_meta(workflow, {'mode': 'slow'})
    assert compiled == []


@pytest.mark.parametrize('parts,path', [
    ([], '$'),
    (['polls'], '$.polls'),
    (['checks', 2], '$.checks[2]'),
    (['a b', 0, '_x1'], '$["a b"][0]._x1'),
    (['1st', 'é'], '$["1st"]["é"]'),
])
def test_json_path(parts, path):
    assert meta.json_path(parts) == path
