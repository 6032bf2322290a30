"""Order type declarations: the checks they must pass, the workflow index."""

import pytest

from tests import config
from worker import order_types
from worker.order_types import base
from worker.order_types import certificate
from worker.order_types import fanout
from worker import policy


def _type(steps, compensation=None, methods=None):
    """An order type class with ``steps`` and a method for each name.

    :param methods: the names that get a method; by default every step
        and the compensation.
    """
    if methods is None:
        methods = [step.name for step in steps
                   if isinstance(step, base.Step)]
        if compensation is not None:
            methods.append(compensation.name)
    namespace = {name: lambda self, order: None for name in methods}
    namespace.update(steps=tuple(steps), compensation=compensation)
    return type('Demo', (base.OrderType,), namespace)


def _refused(type_class):
    with pytest.raises(base.InvalidOrderType) as caught:
        base.check('demo', type_class)
    message = str(caught.value)
    assert message.startswith('order type demo: ')
    return message


def test_a_type_with_no_steps_is_refused():
    assert 'declares no steps' in _refused(_type([]))


@pytest.mark.parametrize('name', [
    'Issue', '1st', '_issue', 'check-key', 'check key', '', 'a' * 65,
])
def test_a_bad_step_name_is_refused(name):
    message = _refused(_type([base.Step(name)], methods=[]))
    assert 'step name %r' % name in message


def test_the_longest_step_name_is_accepted():
    name = 'a' * 64
    assert base.check('demo', _type([base.Step(name)])).names == (name,)


def test_a_step_declared_twice_is_refused():
    message = _refused(_type([base.Step('issue'), base.Step('issue')]))
    assert 'step issue is declared twice' in message


def test_a_compensation_named_like_a_step_is_refused():
    message = _refused(_type([base.Step('issue')],
                             compensation=base.Step('issue')))
    assert 'step issue is declared twice' in message


def test_something_other_than_a_step_is_refused():
    message = _refused(_type([base.Step('issue'), 'poll']))
    assert "'poll' is not a Step" in message


def test_an_unknown_predecessor_is_refused_by_name():
    message = _refused(_type([
        base.Step('issue', after=('check_key', 'check_caa')),
        base.Step('check_key'),
    ]))
    assert 'step issue comes after unknown step(s) check_caa' in message


def test_a_compensation_is_no_predecessor():
    message = _refused(_type([base.Step('issue', after=('revoke',))],
                             compensation=base.Step('revoke')))
    assert 'unknown step(s) revoke' in message


def test_a_cycle_is_refused_with_its_path():
    message = _refused(_type([
        base.Step('start'),
        base.Step('a', after=('start', 'c')),
        base.Step('b', after=('a',)),
        base.Step('c', after=('b',)),
    ]))
    assert 'its steps form a cycle: a -> c -> b -> a' in message


def test_a_step_after_itself_is_a_cycle():
    message = _refused(_type([base.Step('poll', after=('poll',))]))
    assert 'cycle: poll -> poll' in message


def test_a_step_with_no_method_is_refused():
    message = _refused(_type([base.Step('issue'), base.Step('poll')],
                             methods=['issue']))
    assert 'step poll has no method Demo.poll to run it' in message


def test_a_compensation_with_no_method_is_refused():
    message = _refused(_type([base.Step('issue')],
                             compensation=base.Step('revoke'),
                             methods=['issue']))
    assert 'step revoke has no method Demo.revoke' in message


def test_an_attribute_that_is_not_callable_is_no_method():
    type_class = _type([base.Step('issue')], methods=[])
    type_class.issue = 'not a method'
    assert 'no method Demo.issue' in _refused(type_class)


@pytest.mark.parametrize('schema,problem', [
    ({'type': 'objekt'}, 'meta_schema is not a valid JSON Schema at '
     '$.type: '),
    ({'properties': {'polls': {'minimum': 'zero'}}},
     'meta_schema is not a valid JSON Schema at '
     '$.properties.polls.minimum: '),
    ({'required': 'polls'}, 'at $.required: '),
    (True, 'meta_schema must be a dict (a JSON Schema), not bool'),
    ('{"type": "object"}', 'meta_schema must be a dict'),
])
def test_a_meta_schema_that_is_no_json_schema_is_refused(schema, problem):
    type_class = _type([base.Step('issue')])
    type_class.meta_schema = schema
    assert problem in _refused(type_class)


def test_check_carries_the_meta_schema():
    type_class = _type([base.Step('issue')])
    assert base.check('demo', type_class).meta_schema is None
    type_class.meta_schema = {'type': 'object', 'required': ['cn']}
    workflow = base.check('demo', type_class)
    assert workflow.meta_schema == {'type': 'object', 'required': ['cn']}
    # A workflow with a schema is still hashable (a cache key).
    assert hash(workflow) == hash(base.check('demo', type_class))


# check_domains ─┐
# check_key ─────┴─> issue ─> poll ─┬─> store
#                                   └─> notify
_DIAMOND = (
    base.Step('check_domains'),
    base.Step('check_key'),
    base.Step('issue', after=('check_domains', 'check_key'),
              policy=policy.StepPolicy(max_attempts=4)),
    base.Step('poll', after=('issue',)),
    base.Step('store', after=('poll',)),
    base.Step('notify', after=('poll',)),
)


@pytest.fixture
def workflow():
    type_class = _type(_DIAMOND, compensation=base.Step('revoke'))
    type_class.deadline_seconds = 3600
    return base.check('demo', type_class)


def test_check_returns_the_declaration(workflow):
    assert workflow.type_name == 'demo'
    assert workflow.names == ('check_domains', 'check_key', 'issue', 'poll',
                              'store', 'notify')
    assert workflow.compensation == base.Step('revoke')
    assert workflow.deadline_seconds == 3600.0
    assert isinstance(workflow.deadline_seconds, float)


def test_roots_are_the_steps_after_none(workflow):
    assert workflow.roots() == ('check_domains', 'check_key')


@pytest.mark.parametrize('done,started,ready', [
    (set(), set(), ('check_domains', 'check_key')),
    ({'check_domains'}, {'check_domains', 'check_key'}, ()),
    ({'check_domains', 'check_key'}, {'check_domains', 'check_key'},
     ('issue',)),
    ({'check_domains', 'check_key', 'issue', 'poll'},
     {'check_domains', 'check_key', 'issue', 'poll'}, ('store', 'notify')),
    ({'check_domains', 'check_key', 'issue', 'poll'},
     {'check_domains', 'check_key', 'issue', 'poll', 'store'},
     ('notify',)),
])
def test_ready_steps_have_every_predecessor_done(workflow, done, started,
                                                 ready):
    assert workflow.ready(done, started) == ready


def test_step_finds_steps_and_the_compensation(workflow):
    assert workflow.step('issue').policy.max_attempts == 4
    assert workflow.step('issue').after == ('check_domains', 'check_key')
    assert workflow.step('revoke') == base.Step('revoke')
    with pytest.raises(KeyError):
        workflow.step('delete_everything')


@pytest.mark.parametrize('name,expected', [
    ('issue', True), ('revoke', True), ('run', False), ('build', False),
    ('delete_everything', False),
])
def test_has_step(workflow, name, expected):
    assert workflow.has_step(name) is expected


def test_run_calls_the_method_of_the_step():
    class Recording(base.OrderType):
        steps = (base.Step('issue'),)

        def issue(self, order):
            return ('issued', order)

    assert Recording().run('issue', 'the view') == ('issued', 'the view')


@pytest.mark.parametrize('name,type_class', [
    ('certificate', certificate.CertificateOrder),
    ('fanout', fanout.FanoutOrder),
])
def test_installed_types_load_and_pass_check(name, type_class):
    workflow = order_types.get(name)
    assert workflow.type_class is type_class
    assert workflow == base.check(name, type_class)


def test_the_certificate_workflow_is_the_blueprints():
    workflow = order_types.get('certificate')
    assert workflow.roots() == ('process_type_order',)
    assert workflow.step('check_certificate_status').after == \
        ('process_type_order',)


def test_an_unknown_type_names_the_installed_ones():
    with pytest.raises(order_types.UnknownOrderType) as caught:
        order_types.get('renewal')
    message = str(caught.value)
    assert "'renewal'" in message
    assert 'certificate' in message and 'fanout' in message


def test_a_type_with_an_option_group_is_built_with_its_options():
    conf = config.make_conf(**{'fanout.poll_interval_seconds': 42.0})
    instance = order_types.instantiate(order_types.get('fanout'), conf)
    assert instance.poll_interval_seconds == 42.0
