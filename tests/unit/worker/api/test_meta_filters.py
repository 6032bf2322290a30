"""The checks and parsing of meta filters (``worker.api.meta_filters``)."""

import pytest

from worker import api
from worker.api import meta_filters
from worker.db import meta_search


def test_a_dotted_path_is_its_keys_and_the_filters_come_in_path_order():
    assert meta_filters.check({'issuer.name': 'x', 'ca': 'acme'}) == (
        meta_search.MetaFilter(('ca',), 'acme'),
        meta_search.MetaFilter(('issuer', 'name'), 'x'))
    assert meta_filters.check(None) == ()


@pytest.mark.parametrize('text,value', [
    ('3', 3), ('3.5', 3.5), ('"3"', '3'), ('true', True), ('false', False),
    ('null', None), ('acme', 'acme'), ('', ''), ('a=b', 'a=b'),
    ('NaN', 'NaN'), ('"with space"', 'with space')])
def test_a_value_is_the_json_scalar_it_spells_or_else_its_text(text, value):
    parsed = meta_filters.parse_value(text)
    assert parsed == value and type(parsed) is type(value)


def test_parse_reads_key_equals_value_items():
    assert meta_filters.parse(['ca=acme', 'issuer.n=3', 'x=a=b']) == {
        'ca': 'acme', 'issuer.n': 3, 'x': 'a=b'}


@pytest.mark.parametrize('items,message', [
    (['ca'], 'is not KEY=VALUE'),
    (['ca=1', 'ca=2'], 'given twice'),
    (['ca=[1]'], 'not an array'),
    (['ca={"a": 1}'], 'not an object'),
    (['.ca=1'], 'each key is letters'),
    (['c a=1'], 'each key is letters'),
    (['-ca=1'], 'each key is letters'),
    (['ca..b=1'], 'each key is letters'),
])
def test_parse_refuses_what_is_no_filter(items, message):
    with pytest.raises(api.InvalidRequest, match=message):
        meta_filters.parse(items)


@pytest.mark.parametrize('meta,bound', [
    ({'k%d' % n: 1 for n in range(meta_filters.MAX_META_FILTERS + 1)},
     meta_filters.MAX_META_FILTERS),
    ({'.'.join(['a'] * (meta_filters.MAX_META_PATH_DEPTH + 1)): 1},
     meta_filters.MAX_META_PATH_DEPTH),
    ({'a' * (meta_filters.MAX_META_KEY_LENGTH + 1): 1},
     meta_filters.MAX_META_KEY_LENGTH),
    ({'a': 'x' * meta_filters.MAX_META_VALUE_LENGTH},
     meta_filters.MAX_META_VALUE_LENGTH),
])
def test_the_bounds_are_out_of_bounds_errors_naming_them(meta, bound):
    with pytest.raises(api.OutOfBounds) as raised:
        meta_filters.check(meta)
    assert raised.value.field == 'meta' and raised.value.bound == bound


def test_the_deepest_and_the_most_filters_allowed_pass():
    deep = '.'.join(['a'] * meta_filters.MAX_META_PATH_DEPTH)
    many = {'k%d' % n: n for n in range(meta_filters.MAX_META_FILTERS - 1)}
    assert len(meta_filters.check(dict(many, **{deep: 'v'}))) == \
        meta_filters.MAX_META_FILTERS


@pytest.mark.parametrize('meta', [
    ['ca'], {'ca': [1]}, {'ca': {'a': 1}}, {'ca': float('nan')}, {1: 'x'}])
def test_check_refuses_what_is_no_scalar_or_no_mapping(meta):
    with pytest.raises(api.InvalidRequest):
        meta_filters.check(meta)


def test_a_path_is_quoted_key_by_key_for_the_sql_functions():
    assert meta_search.json_path(('a-b', 'c')) == '$."a-b"."c"'
    assert meta_search.nested(meta_search.MetaFilter(('a', 'b'), 1)) == {
        'a': {'b': 1}}
