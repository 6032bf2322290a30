"""``order list --meta`` and ``order bulk``, run as an operator runs them
on a SQLite database."""

import json


def _create(operator, meta, count=1, project='p1'):
    done = operator.manage('order', 'create', '--type', 'certificate',
                           '--count', str(count), '--project', project,
                           '--meta', json.dumps(meta), '-f', 'json')
    assert done.returncode == 0, done.stderr
    return sorted(order['id'] for order in json.loads(done.stdout))


def _listed(operator, *argv):
    done = operator.manage('order', 'list', '-f', 'json', *argv)
    assert done.returncode == 0, done.stderr
    return sorted((order['id'], order['status'])
                  for order in json.loads(done.stdout))


def test_order_list_filters_by_meta_paths(operator):
    acme = _create(operator, {'ca': 'acme', 'issuer': {'n': 3}})
    _create(operator, {'ca': 'other', 'issuer': {'n': '3'}})
    assert [row[0] for row in _listed(
        operator, '--meta', 'ca=acme')] == acme
    assert [row[0] for row in _listed(
        operator, '--meta', 'ca=acme', '--meta', 'issuer.n=3')] == acme
    assert _listed(operator, '--meta', 'ca=acme', '--meta',
                   'issuer.n="3"') == []
    refused = operator.manage('order', 'list', '--meta', 'ca')
    assert refused.returncode != 0
    assert "meta filter 'ca' is not KEY=VALUE" in refused.stderr


def test_order_bulk_cancel_prints_what_it_matched_and_changed(operator):
    acme = _create(operator, {'ca': 'acme'}, count=3)
    other = _create(operator, {'ca': 'other'})
    dry = operator.manage('order', 'bulk', 'cancel', '--meta', 'ca=acme',
                          '--limit', '2', '--dry-run')
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout == ('3 order(s) matched; cancel would change 2 (dry '
                          'run, nothing changed)\n')
    assert {status for _, status in _listed(operator)} == {'PENDING'}

    done = operator.manage('order', 'bulk', 'cancel', '--meta', 'ca=acme',
                           '--project', 'p1')
    assert done.returncode == 0, done.stderr
    assert done.stdout == '3 order(s) matched; 3 changed (cancel)\n'
    assert _listed(operator) == sorted(
        [(order_id, 'CANCELLED') for order_id in acme] +
        [(order_id, 'PENDING') for order_id in other])


def test_order_bulk_reprioritize_and_the_refusals(operator):
    [order_id] = _create(operator, {'ca': 'acme'})
    done = operator.manage('order', 'bulk', 'reprioritize', '--type',
                           'certificate', '--priority', '8')
    assert done.stdout == '1 order(s) matched; 1 changed (reprioritize)\n'
    shown = json.loads(operator.manage('order', 'show', order_id, '-f',
                                       'json').stdout)
    assert shown['priority'] == 8
    for argv, message in [
            (('pause', '--reason', 'x' * 256), 'reason'),
            (('cancel', '--status', 'ERROR'), 'applies to PENDING orders'),
            (('reprioritize',), 'needs the new priority'),
            (('cancel', '--meta', 'a b=1'), 'each key is letters')]:
        refused = operator.manage('order', 'bulk', *argv)
        assert refused.returncode != 0, argv
        assert message in refused.stderr, (argv, refused.stderr)
