"""The benchmark's output: one table and ``results.json`` (the PNG plots
are ``plots``'s).

Every row of the table puts a figure beside its reference measured in the
same run, their ratio, the issue's target and whether it is met. A
measurement that failed shows as an error row; the others still print.
"""

import dataclasses
import json
import os


@dataclasses.dataclass
class Row:
    """One line of the table."""

    measurement: str
    figure: str
    reference: str
    ratio: float | None
    target: str
    met: bool | None


def _by(records, **keys):
    return [r for r in records
            if all(r.get(k) == v for k, v in keys.items())]


def _rows_dispatch(result):
    kombu = result['kombu']['rate']
    reference = 'kombu confirmed publish, 1 conn: %.0f msg/s' % kombu
    if result.get('repeats', 1) > 1:
        reference += ' (median of %d)' % result['repeats']
    rows = []
    for backend, label in (('sqlite', 'SQLite'), ('postgresql', 'PostgreSQL')):
        figures = result['pass_%s' % backend]
        ratio = figures['rate'] / kombu
        rows.append(Row(
            '1. dispatch rate of one pass, %s (%d rows, %d delivered in '
            '%d messages)' % (label, figures['rows'], figures['delivered'],
                              figures['messages']) +
            (', median of %d' % len(figures['runs'])
             if len(figures.get('runs', ())) > 1 else ''),
            '%.0f rows/s' % figures['rate'], reference, ratio, '>= 1.0x',
            ratio >= 1.0 and figures['delivered'] == figures['rows']))
    postgresql = result['pass_postgresql']
    rows.append(Row(
        '12.4 dispatch rate of one pass, PostgreSQL',
        '%.0f rows/s' % postgresql['rate'], 'SQLite, same run: %.0f rows/s'
        % result['pass_sqlite']['rate'], None, '>= 15000 rows/s',
        postgresql['rate'] >= 15000))
    for figures in result['sweep']['oslo_cast']:
        if figures['threads'] in (1, 4):
            rows.append(Row(
                '   oslo.messaging cast loop, %d thread(s), one client'
                % figures['threads'], '%.0f msg/s' % figures['rate'],
                reference, figures['rate'] / kombu, '(info)', None))
    return rows


def _rows_drain(result):
    ours, celery = result['ours'], result['celery']
    complete = result.get('ours_complete')
    if 'error' in celery:
        # Our figures still print; their ratios cannot.
        celery = {'rate': 0.0}
        reference = 'Celery: ERROR %s' % result['celery']['error'][:40]
    else:
        reference = 'Celery %s prefork c=%d, eta: %.0f tasks/s' % (
            celery['celery'], celery['processes'], celery['rate'])
    ratio = ours['rate'] / celery['rate'] if celery['rate'] else None
    rows = [Row(
        '2. drain %d rows due at T, %d workers (no-op step)'
        % (ours['rows'], ours['processes']),
        '%.0f rows/s (%.1fs)' % (ours['rate'], ours['seconds']), reference,
        ratio, '>= 1.5x', ratio is not None and ratio >= 1.5)]
    rows.append(Row(
        '2. drain lost / duplicated',
        '%d / %d' % (ours['lost'], ours['duplicated']),
        'Celery: %d / %d' % (celery['lost'], celery['duplicated'])
        if 'lost' in celery else reference, None,
        '0 / 0', ours['lost'] == 0 and ours['duplicated'] == 0))
    if complete:
        rows.extend(_rows_drain_complete(complete, celery, reference))
    rows.extend(_rows_drain_mariadb(result))
    big = result.get('ours_complete_100k')
    if big:
        rows.append(_row_pool_memory(big))
    return rows + _rows_drain_peers(result)


def _rows_drain_complete(complete, celery, reference):
    """Issue 12's targets 1, 3 and 7 on the drain with claim + complete."""
    ratio = complete['rate'] / celery['rate'] if celery['rate'] else None
    whole = complete['lost'] == 0 and complete['duplicated'] == 0
    return [Row(
        '12.1 drain %d due at T, %d workers, claim + plugin + complete'
        % (complete['rows'], complete['processes']),
        '%.0f orders/s, %d lost / %d dup' % (
            complete['rate'], complete['lost'], complete['duplicated']),
        reference + ' (no-op)', ratio, '>= 1.0x, 0 / 0',
        ratio is not None and ratio >= 1.0 and whole),
        _row_cpu('12.3 worker CPU per step, that drain', complete),
        _row_pool_memory(complete)]


def _rows_drain_mariadb(result):
    """Issue 32, part 2: the claim + complete drain on MariaDB beside the
    same on PostgreSQL, same run."""
    mariadb, postgresql = (result.get('complete_mariadb'),
                           result.get('ours_complete'))
    if mariadb is None or postgresql is None:
        return []
    measurement = ('32. drain %d due at T on MariaDB, %d workers, claim + '
                   'plugin + complete' % (result['rows'],
                                          result['processes']))
    if 'error' in mariadb:
        return [Row(measurement, 'ERROR', mariadb['error'][:60], None,
                    '(info)', None)]
    return [Row(
        measurement, '%.0f orders/s, %d lost / %d dup' % (
            mariadb['rate'], mariadb['lost'], mariadb['duplicated']),
        'PostgreSQL: %.0f orders/s' % postgresql['rate'],
        _ratio(mariadb['rate'], postgresql['rate']), '(info), 0 / 0',
        None if mariadb['lost'] == mariadb['duplicated'] == 0 else False)]


def _row_cpu(measurement, figures):
    return Row(measurement, '%.2f ms' % figures['cpu_ms_per_step'],
               'all worker processes, user + system: %.1f s'
               % figures['worker_cpu_seconds'], None, '<= 1 ms',
               figures['cpu_ms_per_step'] <= 1.0)


def _row_pool_memory(figures):
    largest = max(figures['worker_parent_mb'], figures['worker_process_mb'],
                  figures['retry_mb'])
    return Row(
        '12.7 largest RSS of one pool process, draining %d' % figures['rows'],
        '%.0f MB' % largest, 'worker parent %.0f, worker %.0f, retry %.0f MB'
        % (figures['worker_parent_mb'], figures['worker_process_mb'],
           figures['retry_mb']), None, '<= 100 MB', largest <= 100.0)


def _rows_pass_cost(result):
    records = result['records']
    largest, base = max(result['sizes']), 10000
    rows = []
    for backend, label, limit in (('sqlite', 'SQLite', 2.0),
                                  ('postgresql', 'PostgreSQL', 5.0),
                                  ('mysql', 'MariaDB', 5.0)):
        if not _by(records, backend=backend):
            continue
        top = _by(records, backend=backend, rows=largest)[0]
        ten = _by(records, backend=backend, rows=base)[0]
        rows.append(Row(
            '3. pass finding nothing due, %s, %d rows' % (label, largest),
            '%.2f ms' % top['pass_ms'],
            'raw indexed SELECT: %.3f ms' % top['raw_select_ms'],
            top['pass_ms'] / top['raw_select_ms'], '<= %.0f ms' % limit,
            top['pass_ms'] <= limit))
        growth = top['pass_ms'] / ten['pass_ms']
        rows.append(Row(
            '3. pass cost %d / %d rows, %s' % (largest, base, label),
            '%.2f ms' % top['pass_ms'], '%.2f ms at %d rows' % (
                ten['pass_ms'], base), growth, '<= 1.5x', growth <= 1.5))
        rows.append(Row(
            '   due query alone, %s, %d rows' % (label, largest),
            '%.2f ms' % top['due_query_ms'],
            'raw indexed SELECT: %.3f ms' % top['raw_select_ms'],
            top['due_query_ms'] / top['raw_select_ms'], '(info)', None))
        rows.append(_row_plans(label, largest,
                               result.get('plans', {}).get(backend)))
    return rows


def _row_plans(label, size, plans):
    """Target 12.6's plans: every read by its index, none sorting."""
    if not plans:
        return Row('12.6 query plans, %s, %d rows' % (label, size),
                   'not measured', '', None, 'index, no sort', None)
    good = [plan for plan in plans if plan['uses_index'] and (
        not plan['sorts'] or plan.get('sort_allowed'))]
    return Row(
        '12.6 query plans of a pass, %s, %d rows (idle and all due)'
        % (label, size), '%d of %d by their index, no sort'
        % (len(good), len(plans)), 'query_plans.txt', None,
        'index, no sort', len(good) == len(plans))


def _rows_lateness(result):
    one, many = result['one'], result['many']
    rows = [Row(
        '4. lateness p99, 1 daemon (period %ds, jitter %.1f)'
        % (one['period'], one['jitter']),
        '%.2f s' % one['p99'],
        'period x (1+jitter) + longest pass: %.2f s' % one['bound'],
        one['p99'] / one['bound'], '<= 1.0x', one['p99'] <= one['bound'])]
    if many['worst_gap'] is not None:
        ratio = many['worst_gap'] / many['ideal_gap']
        rows.append(Row(
            '4. worst gap between passes, %d daemons' % many['daemons'],
            '%.2f s (mean %.2f s)' % (many['worst_gap'], many['mean_gap']),
            'period / K: %.2f s' % many['ideal_gap'], ratio,
            '~1x (<= 1.5x)', ratio <= 1.5))
    rows.append(Row(
        '   lateness p99, %d daemons' % many['daemons'],
        '%.2f s' % many['p99'], '1 daemon: %.2f s' % one['p99'],
        many['p99'] / one['p99'], '(info)', None))
    return rows


def _rows_memory(result):
    return [
        Row('5. daemon peak RSS (tree), %d due rows' % result['rows'],
            '%.0f MB' % result['peak_mb'],
            'same daemon idle: %.0f MB' % result['idle_mb'],
            result['peak_mb'] / result['idle_mb'], '<= 100 MB',
            result['peak_mb'] <= 100.0),
        Row('   daemon peak PSS (tree; shared pages counted once)',
            '%.0f MB' % result['peak_pss_mb'],
            'same daemon idle: %.0f MB' % result['idle_pss_mb'],
            result['peak_pss_mb'] / result['idle_pss_mb'], '(info)', None),
    ]


def _rows_worker_pool(result):
    one, two = result['one'], result['two']
    ratio = two['rate'] / one['rate'] if one['rate'] else None
    return [Row(
        '6. orders completed/s, 2 worker processes (%d orders)'
        % result['orders'], '%.1f orders/s' % two['rate'],
        '1 process: %.1f orders/s' % one['rate'], ratio,
        '(info; 32.5 replaced >= 1.7x)', None), Row(
        '   machine CPU busy meanwhile (%d CPUs in all)' % two['cpus'],
        '%.0f%% (2 processes)' % (100 * two['cpu_busy']),
        '1 process: %.0f%%' % (100 * one['cpu_busy']), None, '(info)',
        None)] + _rows_scaling(result) + _rows_procrastinate(result) + \
        _rows_graphile(result) + _rows_receive_floor(result) + \
        _rows_cpu_per_order(result) + [
        _row_cpu('12.3 worker CPU per step, %d process(es)'
                 % figures['processes'], figures) for figures in (one, two)
    ] + _rows_fanout(result) + _rows_notified(result) + _rows_mariadb_pool(
        result)


def _rows_mariadb_pool(result):
    """Issue 32, part 2: the certificate pool on MariaDB beside the same
    on PostgreSQL, same run."""
    mariadb = result.get('mariadb')
    if mariadb is None:
        return []
    rows = []
    for key in ('one', 'two'):
        ours, postgresql = mariadb.get(key), result[key]
        measurement = ('32. certificate orders/s on MariaDB, %d worker '
                       'process(es)' % postgresql['processes'])
        if ours is None:
            rows.append(Row(measurement, 'ERROR',
                            mariadb.get('error', '?')[:60], None, '>= 0.8x',
                            False))
            continue
        ratio = _ratio(ours['rate'], postgresql['rate'])
        rows.append(Row(
            measurement, '%.1f orders/s' % ours['rate'],
            'PostgreSQL: %.1f orders/s' % postgresql['rate'], ratio,
            '>= 0.8x', ratio is not None and ratio >= 0.8))
    return rows


def _rows_burst(result):
    """Issue 29, item 5: every order ACTIVE, 0 lost, worker RSS bounded."""
    bounded, unbounded = result['bounded'], result['unbounded']
    return [
        Row('29.5 burst of %d single-step orders: lost' % result['orders'],
            '%d' % bounded['lost'], 'no bound: %d' % unbounded['lost'],
            None, '0', bounded['lost'] == 0),
        Row('     largest worker RSS (max_queued_steps = %d)'
            % result['max_queued_steps'], '%.0f MB' % bounded['worker_mb'],
            'no bound: %.0f MB' % unbounded['worker_mb'],
            _ratio(bounded['worker_mb'], unbounded['worker_mb']),
            '<= 100 MB', bounded['worker_mb'] <= 100.0),
        Row('     orders/s to ACTIVE', '%.0f orders/s' % bounded['rate'],
            'no bound: %.0f orders/s' % unbounded['rate'],
            _ratio(bounded['rate'], unbounded['rate']), '(info)', None),
        Row('     largest backlog in the broker (messages ready)',
            '%d' % bounded['peak_queue_depth'],
            'no bound: %d' % unbounded['peak_queue_depth'], None, '(info)',
            None),
    ]


def _ratio(figure, reference):
    return figure / reference if reference else None


def _rows_procrastinate(result):
    """Issue 12's target 2: whole orders/s against Procrastinate."""
    rows = []
    for key, ours in (('procrastinate_one', result['one']),
                      ('procrastinate_two', result['two'])):
        peer = result.get(key)
        if peer is None:
            continue
        measurement = ('12.2 certificate orders/s, %d worker process(es)'
                       % ours['processes'])
        if 'error' in peer:
            rows.append(Row(measurement, '%.1f orders/s' % ours['rate'],
                            'Procrastinate: ERROR %s' % peer['error'][:50],
                            None, '>= 3x', False))
            continue
        ratio = ours['rate'] / peer['rate'] if peer['rate'] else None
        rows.append(Row(
            measurement, '%.1f orders/s' % ours['rate'],
            'Procrastinate %s, %d process(es) c=%s, 2 jobs: %.1f orders/s'
            % (peer.get('version', '?'), peer['processes'],
               peer.get('concurrency', '?'), peer['rate']),
            ratio, '>= 3x', ratio is not None and ratio >= 3.0))
    return rows


def _rows_fanout(result):
    fanout, two = result.get('fanout_two'), result['two']
    if not fanout:
        return []
    return [Row(
        '   fanout orders completed/s, 2 worker processes (%d orders, %d '
        'steps each)' % (fanout['orders'], fanout['steps_per_order']),
        '%.1f orders/s' % fanout['rate'],
        'certificate (%d steps): %.1f orders/s'
        % (two['steps_per_order'], two['rate']),
        fanout['rate'] / two['rate'] if two['rate'] else None, '(info)',
        None), Row(
        '   fanout steps completed/s, 2 worker processes',
        '%.0f steps/s' % fanout['step_rate'],
        'certificate: %.0f steps/s' % two['step_rate'],
        fanout['step_rate'] / two['step_rate'] if two['step_rate']
        else None, '(info)', None)]


def _rows_notified(result):
    """Issue 30, part 3: orders/s with every order subscribed to one URL
    against the same run without, every event delivered in order; events
    per second and what the receiver cost beside them."""
    notified, two = result.get('notified_two'), result['two']
    if not notified:
        return []
    expected = 3 * notified['orders']
    ratio = notified['rate'] / two['rate'] if two['rate'] else None
    in_order = (notified.get('events', 0) == expected and
                notified.get('events_out_of_order', 0) == 0 and
                notified.get('orders_notified') == notified['orders'])
    return [Row(
        '30.3 certificate orders/s, each subscribed to one URL, 2 worker '
        'processes (first_run_delay_seconds = %g)'
        % notified.get('first_run_delay', 0.0),
        '%.1f orders/s' % notified['rate'],
        'without: %.1f orders/s' % two['rate'], ratio, '>= 0.75x',
        ratio is not None and ratio >= 0.75), Row(
        '     events delivered in order (%d orders, %d events)'
        % (notified['orders'], expected),
        '%d, %d out of order, %d again' % (
            notified.get('events', 0),
            notified.get('events_out_of_order', 0),
            notified.get('events_duplicated', 0)),
        'orders with all 3: %d' % notified.get('orders_notified', 0),
        None, 'all, in order', in_order), Row(
        '     events delivered/s to the receiver process',
        '%.0f events/s' % notified.get('event_rate', 0.0),
        'receiver CPU: %.0f us/request, %.2f s in all' % (
            1e6 * notified.get('receiver_cpu_per_event', 0.0),
            notified.get('receiver_cpu_seconds', 0.0)),
        None, '(info)', None)]


def _rows_cluster(result):
    """Issue 15: the clusters beside the single servers, same run."""
    rows = []
    for key, what, unit in (
            ('drain', '15. drain %d due at T on the Galera + RabbitMQ '
             'clusters, %d launchers', 'orders/s'),
            ('pool', '15. certificate orders/s on the clusters (%d '
             'orders), %d launchers', 'orders/s')):
        ours, single = result['cluster'][key], result['single'][key]
        size = ours.get('rows', ours.get('orders'))
        rows.append(Row(
            what % (size, result['launchers']),
            '%.1f %s (%d done)' % (ours['rate'], unit, ours['done']),
            'one MariaDB, one broker: %.1f %s' % (single['rate'], unit),
            ours['rate'] / single['rate'] if single['rate'] else None,
            '(info)', None))
    return rows + _rows_galera(result)


def _rows_galera(result):
    """Issue 32, part 2: the Galera cluster with the one broker beside one
    MariaDB, same run."""
    galera = result.get('galera')
    if galera is None:
        return []
    rows = []
    for key, what in (('drain', '32. drain %d due at T on Galera (one '
                       'broker), %d launchers'),
                      ('pool', '32. certificate orders/s on Galera (one '
                       'broker, %d orders), %d launchers')):
        ours, single = galera[key], result['single'][key]
        ratio = _ratio(ours['rate'], single['rate'])
        rows.append(Row(
            what % (ours.get('rows', ours.get('orders')),
                    result['launchers']),
            '%.1f orders/s (%d done)' % (ours['rate'], ours['done']),
            'one MariaDB: %.1f orders/s' % single['rate'], ratio,
            '>= 0.85x', ratio is not None and ratio >= 0.85))
    return rows


_DATABASES = (('sqlite', 'SQLite'), ('postgresql', 'PostgreSQL'),
              ('mysql', 'MariaDB'))


def _rows_create(result):
    """Issue 27: orders created/s through worker.api, beside the way
    before it (commands.create), same run."""
    rows = []
    for backend, label in _DATABASES:
        figures = result['backends'].get(backend)
        if figures is None:
            continue
        rows.extend(_rows_create_backend(figures, label))
    return rows


def _rows_create_backend(figures, label):
    reference, no_key = figures['reference'], figures['no_key']

    def rate(variant):
        return '%.0f orders/s' % figures[variant]['rate']

    def ratio(variant, base):
        return (figures[variant]['rate'] / base['rate'] if base['rate']
                else None)
    no_key_text = 'create, no key: %s' % rate('no_key')
    return [
        Row('27. create, one order a call, no key, %s (%d orders)'
            % (label, no_key['orders']), rate('no_key'),
            'commands.create, one a call: %s'
            % rate('reference'), ratio('no_key', reference), '(info)',
            None),
        Row('    create, a new idempotency key each, %s' % label,
            rate('new_key'), no_key_text, ratio('new_key', no_key),
            '(info)', None),
        Row('    create, a key that exists (retried request), %s' % label,
            rate('existing_key'), no_key_text,
            ratio('existing_key', no_key), '(info)', None),
        Row('    create_many, %d orders a call, %s (%d orders)'
            % (figures['bulk_size'], label, figures['bulk']['orders']),
            rate('bulk'), no_key_text, ratio('bulk', no_key), '(info)',
            None),
        Row('    orders stored, casts queued, %s' % label,
            '%d, %d' % (figures['orders_stored'], figures['messages']),
            'expected: %d, %d' % (figures['expected_orders'],
                                  figures['expected_messages']),
            None, 'as expected',
            figures['orders_stored'] == figures['expected_orders'] and
            figures['messages'] == figures['expected_messages']),
    ]


def _rows_purge(result):
    """Issue 28: rows purged/s; the worker pool beside a purge."""
    rows = []
    sqlite = result['rate_sqlite']
    for figures, label in ((result['rate_postgresql'], 'PostgreSQL'),
                           (sqlite, 'SQLite')):
        rows.append(Row(
            '28. rows purged/s, %s (%d finished orders, %d rows)'
            % (label, figures['orders'], figures['rows']),
            '%.0f rows/s (%.0f orders/s)' % (
                figures['rate'], figures['order_rate']),
            'kept %d of %d, left %d' % (
                figures['kept'], figures['expected_kept'], figures['left']),
            None, 'all old gone, others kept',
            figures['left'] == 0 and
            figures['kept'] == figures['expected_kept']))
    pool = result['pool']
    with_purge, without = pool['with'], pool['without']
    ratio = (with_purge['rate'] / without['rate'] if without['rate']
             else None)
    rows.append(Row(
        '28. orders completed/s beside a purge, 2 workers (%d orders)'
        % with_purge['orders'], '%.1f orders/s' % with_purge['rate'],
        'no purge: %.1f orders/s' % without['rate'], ratio, '(info)',
        None))
    if with_purge.get('purge_seconds'):
        rows.append(Row(
            '    the purge meanwhile', '%.0f rows/s (%d orders)' % (
                with_purge['purged_rows'] / with_purge['purge_seconds'],
                with_purge['purged_orders']),
            '%.1fs' % with_purge['purge_seconds'], None, '(info)', None))
    return rows


def _rows_scaling(result):
    """Issue 32, part 5: what a second process costs per step, which
    the code decides (the machine decides the orders/s of 2 against 1);
    the statements each step sent."""
    one, two = result['one'], result['two']
    ratio = _ratio(two['cpu_ms_per_step'], one['cpu_ms_per_step'])
    rows = [Row(
        '32.5 worker CPU per step, 2 processes against 1 (%d orders)'
        % result['orders'], '%.2f ms' % two['cpu_ms_per_step'],
        '1 process: %.2f ms' % one['cpu_ms_per_step'], ratio, '<= 1.1x',
        ratio is not None and ratio <= 1.1)]
    for figures in (one, two):
        if 'statements_per_step' in figures:
            rows.append(_row_statements(
                '     database statements per step, pool, %d process(es)'
                % figures['processes'], figures))
    return rows


def _row_statements(measurement, figures):
    return Row(measurement, '%.2f' % figures['statements_per_step'],
               'executemany rows per step: %.2f (%d statements in all)'
               % (figures['executemany_rows_per_step'],
                  figures['statements']), None, '(info)', None)


def _rows_graphile(result):
    """Issue 32, part 4: whole orders/s against Graphile Worker."""
    rows = []
    for key, ours in (('graphile_one', result['one']),
                      ('graphile_two', result['two'])):
        peer = result.get(key)
        if peer is None:
            continue
        measurement = ('32.4 certificate orders/s, %d worker process(es)'
                       % ours['processes'])
        if 'error' in peer:
            rows.append(Row(measurement, '%.1f orders/s' % ours['rate'],
                            'Graphile: ERROR %s' % peer['error'][:50],
                            None, '>= 1.5x', False))
            continue
        ratio = _ratio(ours['rate'], peer['rate'])
        rows.append(Row(
            measurement, '%.1f orders/s' % ours['rate'],
            'Graphile Worker %s, %d process(es) c=%d, poll %d ms, 2 jobs: '
            '%.1f orders/s' % (peer['version'], peer['processes'],
                               peer['concurrency'],
                               peer['poll_interval_ms'], peer['rate']),
            ratio, '>= 1.5x', ratio is not None and ratio >= 1.5))
    return rows


def _rows_receive_floor(result):
    """What one process receives at most, doing nothing else, against
    the rate the 1-process target asks (``receive_floor``)."""
    floor = result.get('receive_floor')
    if floor is None:
        return []
    measurement = ('     ceiling: one message per order, received by a '
                   'no-op oslo.messaging server, 1 process')
    if 'error' in floor:
        return [Row(measurement, 'ERROR %s' % floor['error'][:50], '',
                    None, '(info)', None)]
    peer = result.get('graphile_one') or {}
    wanted = 1.5 * peer['rate'] if peer.get('rate') else None
    return [Row(
        measurement, '%.0f messages/s, %.2f ms CPU each'
        % (floor['rate'], floor['cpu_ms_per_message']),
        '1.5x Graphile, 1 process: %s orders/s; ours: %.1f'
        % ('%.0f' % wanted if wanted else '?', result['one']['rate']),
        _ratio(floor['rate'], wanted), '(info)',
        None)]


def _rows_cpu_per_order(result):
    """Where an order's CPU goes, by process, and the orders/s the
    machine's CPUs allow at that cost."""
    rows = []
    for figures in (result['one'], result['two']):
        split = figures.get('cpu_ms_per_order')
        if not split:
            continue
        total = sum(split.values())
        rows.append(Row(
            '     CPU per order by process, %d worker process(es)'
            % figures['processes'],
            ', '.join('%s %.2f' % (name, split[name])
                      for name in ('worker', 'database', 'broker', 'casts')
                      ) + ' ms',
            'all %.2f ms: at most %.0f orders/s on %d CPUs' % (
                total, 1000.0 * figures['cpus'] / total, figures['cpus']),
            None, '(info)', None))
    return rows


def _rows_drain_peers(result):
    """Issue 32, part 4: the claim + complete drain against Graphile
    Worker's drain and Celery's no-op; part 5: its statements."""
    complete = result.get('ours_complete')
    if not complete:
        return []
    measurement = ('32.4 drain %d due at T, %d workers, claim + complete'
                   % (complete['rows'], complete['processes']))
    figure = '%.0f orders/s' % complete['rate']
    rows = []
    for key, name in (('graphile', 'Graphile Worker'),
                      ('celery', 'Celery')):
        peer = result.get(key)
        if peer is None:
            continue
        if 'error' in peer:
            rows.append(Row(measurement, figure, '%s: ERROR %s'
                            % (name, peer['error'][:40]), None, '>= 1.5x',
                            False))
            continue
        ratio = _ratio(complete['rate'], peer['rate'])
        reference = ('Graphile Worker %s, %d process(es) c=%d, poll %d ms, '
                     'one UPDATE: %.0f jobs/s (%d lost / %s dup)' % (
                         peer['version'], peer['processes'],
                         peer['concurrency'], peer['poll_interval_ms'],
                         peer['rate'], peer['lost'], peer['duplicated'])
                     if key == 'graphile' else
                     'Celery %s prefork c=%d, no-op: %.0f tasks/s' % (
                         peer['celery'], peer['processes'], peer['rate']))
        rows.append(Row(measurement, figure, reference, ratio, '>= 1.5x',
                        ratio is not None and ratio >= 1.5))
    if 'statements_per_step' in complete:
        rows.append(_row_statements(
            '     database statements per step, that drain', complete))
    return rows


def _rows_latency(result):
    """Issue 32, part 3: p50 / p99 of create -> first step started and of
    step end -> next step started, at rest and at half a burst's rate."""
    rows = []
    for backend, figures in result['backends'].items():
        label = dict(_DATABASES).get(backend, backend)
        rest, loaded = figures['rest'], figures['loaded']
        rows.extend([
            _row_latency('32.3 create -> first step started, at rest, %s '
                         '(%d orders, one at a time)'
                         % (label, rest['orders']), rest['first'],
                         'p50: to the cast %.1f, cast %.1f, cast -> claim '
                         '%.1f ms' % (rest['to_cast_ms']['p50'],
                                      rest['cast_ms']['p50'],
                                      rest['cast_to_started_ms']['p50']),
                         20.0),
            _row_latency('32.3 step end -> next step started, at rest, %s'
                         % label, rest['next'], 'max %.1f ms'
                         % rest['next']['max'], 10.0)])
        made = ('created at %.0f orders/s, wanted %.0f (half a burst\'s; '
                '%d worker process(es))' % (loaded['rate_made'],
                                            loaded['rate_wanted'],
                                            figures['processes']))
        rows.extend([
            _row_latency('     create -> first step started, %s, %d orders'
                         % (label, loaded['orders']), loaded['first'],
                         made, None),
            _row_latency('     step end -> next step started, %s' % label,
                         loaded['next'], made, None)])
    return rows


def _row_latency(measurement, figures, reference, target_ms):
    p99 = figures['p99']
    return Row(measurement, '%.1f / %.1f ms (p50 / p99)' % (
        figures['p50'], p99), reference, None,
        '(info)' if target_ms is None else 'p99 <= %.0f ms' % target_ms,
        None if target_ms is None else p99 <= target_ms)


def _rows_signal_latency(result):
    """Issue 45, part 2: p50 / p99 of a signal -> its step completed."""
    return [_row_latency(
        '45.2 signal -> waiting step completed, at rest, %s (%d signals)'
        % (dict(_DATABASES).get(backend, backend), figures['count']),
        figures, 'the poll it cut short: 3600 s', 1000.0)
        for backend, figures in result['backends'].items()]


def _rows_rest_api(result):
    # Imported here: rest_report builds its rows with this module's Row.
    from tests.benchmarks import rest_report
    return rest_report.rows(result)


def _rows_bulk_cancel(result):
    """Issue 45.4: the cancel rate, and the other orders' p99 latency
    during the bulk cancel against without it (no target: measured)."""
    during, alone = result['during'], result['baseline']
    ratio = (during['p99'] / alone['p99']
             if during['p99'] and alone['p99'] else None)
    return [
        Row('45.4 bulk cancel, %s, %d orders' % (result['backend'],
                                                 result['held']),
            '%.0f orders/s' % result['cancel_rate'],
            'batches of %d' % result['batch_size'], None, 'measured', None),
        Row('45.4 other orders during it, p99 create -> ACTIVE',
            '%s ms (%.1f/s)' % (during['p99'], during['throughput']),
            '%s ms (%.1f/s) without' % (alone['p99'], alone['throughput']),
            ratio, 'measured', None),
    ]


_ROWS = {
    'dispatch': _rows_dispatch, 'drain': _rows_drain,
    'pass_cost': _rows_pass_cost, 'lateness': _rows_lateness,
    'memory': _rows_memory, 'worker_pool': _rows_worker_pool,
    'burst': _rows_burst, 'latency': _rows_latency,
    'cluster': _rows_cluster, 'create': _rows_create,
    'rest_api': _rows_rest_api,
    'purge': _rows_purge,
    'signal_latency': _rows_signal_latency,
    'bulk_cancel': _rows_bulk_cancel,
}


def rows(results):
    """Table rows for every measurement in ``results``."""
    table = []
    for name, make in _ROWS.items():
        if name not in results:
            continue
        if 'error' in results[name]:
            table.append(Row(name, 'ERROR', results[name]['error'][:60],
                             None, '', False))
            continue
        table.extend(make(results[name]))
    return table


def format_table(table):
    """The table as fixed-width text."""
    header = ('measurement', 'figure', 'reference (same run)', 'ratio',
              'target', 'met?')
    lines = [(r.measurement, r.figure, r.reference,
              '' if r.ratio is None else '%.2fx' % r.ratio, r.target,
              '' if r.met is None else ('yes' if r.met else 'NO'))
             for r in table]
    widths = [max(len(str(line[i])) for line in [header] + lines)
              for i in range(len(header))]

    def fmt(line):
        return '  '.join(str(cell).ljust(width)
                         for cell, width in zip(line, widths)).rstrip()
    rule = '  '.join('-' * width for width in widths)
    return '\n'.join([fmt(header), rule] + [fmt(line) for line in lines])


def write_json(results, table, path):
    """Raw figures and the table, as JSON."""
    document = dict(results)
    document['table'] = [dataclasses.asdict(row) for row in table]
    with open(path, 'w') as out:
        json.dump(document, out, indent=1, default=str)


def write_plans(results, directory):
    """Write the query plans of the pass cost measurement, if any; returns
    the file's path or None."""
    measured = results.get('pass_cost', {}).get('plans')
    if not measured:
        return None
    path = os.path.join(directory, 'query_plans.txt')
    with open(path, 'w') as out:
        for backend, records in measured.items():
            for record in records:
                out.write('== %s, %s, %s: %s %s, %s\n' % (
                    backend, record['moment'], record['query'],
                    'reads' if record['uses_index'] else 'DOES NOT read',
                    record['index'],
                    'sorts' if record['sorts'] else 'no sort'))
                out.writelines('   %s\n' % line for line in record['plan'])
    return path
