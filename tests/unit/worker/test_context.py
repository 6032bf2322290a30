"""Request ids: a cast's context, there and back, and whose it is."""

from oslo_context import context as oslo_context
import pytest

from worker import context
from worker import rpc
from worker import rpcapi
from worker import values

IDS = values.RequestIds('req-order', 'req-global')
SERIALIZER = rpc.ContextSerializer()


@pytest.fixture(autouse=True)
def no_current_context():
    """Each test starts, and leaves, its thread without a context."""
    context.set_current(None)
    yield
    context.set_current(None)


def _through_the_wire(ctxt):
    return SERIALIZER.deserialize_context(SERIALIZER.serialize_context(ctxt))


def test_a_steps_context_comes_back_as_it_was_sent():
    sent = context.StepsContext(
        request_id='req-sender', global_request_id='req-sender-global',
        orders={'o-1': IDS, 'o-2': values.RequestIds('req-2', None)})

    wire = SERIALIZER.serialize_context(sent)
    received = SERIALIZER.deserialize_context(wire)

    # Plain JSON on the wire: the ids of each order as a pair.
    assert wire['orders'] == {'o-1': ['req-order', 'req-global'],
                              'o-2': ['req-2', None]}
    assert isinstance(received, context.StepsContext)
    assert (received.request_id, received.global_request_id) == (
        'req-sender', 'req-sender-global')
    assert received.orders == sent.orders
    assert received.ids_of('o-1') == IDS and received.ids_of('o-3') is None


def test_for_order_is_the_orders_context_else_the_casts():
    received = _through_the_wire(context.StepsContext(
        request_id='req-sender', orders={'o-1': IDS}))

    mine = received.for_order('o-1')
    assert (mine.request_id, mine.global_request_id) == (
        'req-order', 'req-global')
    assert received.for_order('o-2') is received


def test_building_a_context_does_not_make_it_the_threads():
    # A RequestContext makes itself current when built; these are built
    # for a cast or a log line and must not.
    context.StepsContext(orders={'o-1': IDS})
    context.for_ids(IDS)
    _through_the_wire(context.StepsContext())
    assert oslo_context.get_current() is None


def test_current_sets_the_context_for_a_block_only():
    outer = context.for_ids(values.RequestIds('req-outer'))
    with context.current(outer):
        with context.current(context.for_ids(IDS)):
            assert oslo_context.get_current().request_id == 'req-order'
        assert oslo_context.get_current() is outer
        with context.current(None):
            assert oslo_context.get_current() is None
        assert oslo_context.get_current() is outer
    assert oslo_context.get_current() is None


def test_an_order_without_a_request_id_has_no_context():
    assert context.for_ids(None) is None
    # oslo.log writes ids only with a request id; one would be made up.
    assert context.for_ids(values.RequestIds(None, 'req-global')) is None


@pytest.mark.parametrize('garbage', [
    None, 'a string', 7, [1, 2], {'request_id': 5},
    {'request_id': ['req-1']}, {'global_request_id': {'a': 1}},
    {'orders': 'not a map'}, {'orders': ['o-1']},
    {'orders': {'o-1': 'req-1'}}, {'orders': {'o-1': ['req-1']}},
    {'orders': {'o-1': [1, 2]}}, {'orders': {'o-1': ['a', 'b', 'c']}},
    {'orders': {'o-1': None, 'o-2': ['req-2', None]}},
    {'roles': 5, 'is_admin': 'yes', 'unknown': object()},
])
def test_a_malformed_context_is_never_fatal(garbage):
    received = SERIALIZER.deserialize_context(garbage)

    assert oslo_context.get_current() is None
    if received == {}:
        # No request id and no orders' ids: nothing to log with.
        assert not (isinstance(garbage, dict) and (
            garbage.get('request_id') or garbage.get('orders')))
        return
    assert isinstance(received, context.StepsContext)
    assert set(received.orders) <= {'o-2'}
    assert isinstance(received.for_order('o-1'), oslo_context.RequestContext)
    assert oslo_context.get_current() is None


def test_a_malformed_context_keeps_its_well_formed_orders():
    received = SERIALIZER.deserialize_context(
        {'request_id': 'req-s', 'orders': {'o-1': 5, 'o-2': ['req-2', None]}})
    assert received.request_id == 'req-s'
    assert received.orders == {'o-2': values.RequestIds('req-2', None)}


def test_a_cast_without_ids_carries_an_empty_context():
    steps = [values.StepRef('a', 'o-1', 0), values.StepRef('b', 'o-2', 0)]
    assert rpcapi.steps_context(steps) == {}
    assert SERIALIZER.deserialize_context({}) == {}
    assert SERIALIZER.serialize_context(rpcapi.steps_context(
        steps + [values.StepRef('c', 'o-3', 0, IDS)])) == {
            'orders': {'o-3': list(IDS)}}


def test_a_dict_context_goes_as_it_is():
    assert SERIALIZER.serialize_context({'a': 1}) == {'a': 1}
