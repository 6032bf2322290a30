"""The order view a step is given: its lease extension's checks."""

import types

import pytest

from worker.plugins import base


def _view(extender=None):
    return base.OrderView(id='o-1', type='certificate',
                          meta=types.MappingProxyType({}),
                          lease_extender=extender)


def test_extend_lease_asks_the_worker_for_the_seconds_given():
    asked = []
    _view(asked.append).extend_lease(30)
    assert asked == [30.0]


@pytest.mark.parametrize('seconds', [0, -1, base.MAX_LEASE_SECONDS + 1,
                                     True, '30', None, float('nan')])
def test_extend_lease_refuses_what_is_no_lease(seconds):
    asked = []
    with pytest.raises(ValueError, match='a lease is more than 0'):
        _view(asked.append).extend_lease(seconds)
    assert asked == []


def test_a_view_without_a_lease_cannot_extend_one():
    with pytest.raises(base.LeaseLost, match='holds no lease'):
        _view().extend_lease(30)


def test_the_extender_is_no_part_of_the_views_value():
    assert _view(print) == _view() and 'extender' not in repr(_view(print))
