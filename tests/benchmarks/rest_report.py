"""The table rows of ``rest_api`` (issue 44, item 8)."""

from tests.benchmarks import report

#: A page's rows: a plan that reads and drops more than a page's worth
#: before its own does not start at the page.
_PAGE = 100


def _ratio(figure, reference):
    return figure / reference if reference else None


def _rate(figures):
    return '%.0f orders/s' % figures['rate']


def _creates(result, label, keystone_row=True):
    creates = result['creates']
    one, threads = creates['direct_one'], creates['direct_threads']
    reference = max(one, threads, key=lambda figures: figures['rate'])
    reference_text = 'OrderAPI.create, %s: %s' % (
        '1 caller' if reference is one else '%d threads' % result['clients'],
        _rate(reference))
    rows = []
    for auth in result['auth']:
        http = creates['http_' + auth]
        ratio = http['rate'] / reference['rate']
        rows.append(report.Row(
            '44.8 POST /v1/orders, %d keep-alive clients, %s, %s '
            '(%d orders, %d failed)' % (result['clients'], _auth(auth),
                                        label, http['requests'],
                                        http['failed']),
            _rate(http), reference_text, ratio, '>= 0.5x',
            ratio >= 0.5 and http['failed'] == 0))
    other = threads if reference is one else one
    rows.append(report.Row(
        '     OrderAPI.create, %s' % (
            '%d threads' % result['clients'] if other is threads
            else '1 caller'), _rate(other), reference_text,
        other['rate'] / reference['rate'], '(info)', None))
    http = creates['http_noauth']
    rows.append(report.Row(
        '     CPU per create: API server (%d x %d threads), HTTP client'
        % (result['gunicorn_workers'], result['gunicorn_threads']),
        '%.2f ms, %.2f ms' % (http['server_cpu_ms'], http['client_cpu_ms']),
        'direct, %d threads: %.2f ms' % (result['clients'],
                                         threads['client_cpu_ms']),
        _ratio(http['server_cpu_ms'], threads['client_cpu_ms']), '(info)',
        None))
    if keystone_row and not result['keystone_available']:
        rows.append(report.Row(
            '     keystone auth_token variant', 'not run',
            'no BARBICAN_RETRY_TEST_KEYSTONE_URL', None, '(info)', None))
    return rows


def _auth(auth):
    return {'noauth': 'noauth (X-Project-Id)',
            'keystone': 'keystone (cached token)'}[auth]


def _latency(result):
    latency = result['latency']
    rest, loaded = latency['at_rest'], latency['half_rate']
    text = '%.1f / %.1f ms'
    return [
        report.Row('44.8 POST /v1/orders p50 / p99 at rest (1 client, %d)'
                   % rest['requests'],
                   text % (rest['latency']['p50_ms'],
                           rest['latency']['p99_ms']),
                   '%d failed' % rest['failed'], None, '(info)', None),
        report.Row('     p50 / p99 open-loop at half the rate (%.0f/s asked, '
                   '%.0f/s done, %d)' % (loaded['rate_asked'],
                                         loaded['rate'], loaded['requests']),
                   text % (loaded['latency']['p50_ms'],
                           loaded['latency']['p99_ms']),
                   'at rest p99: %.1f ms' % rest['latency']['p99_ms'],
                   _ratio(loaded['latency']['p99_ms'],
                          rest['latency']['p99_ms']),
                   '(info), 0 failed', None if loaded['failed'] == 0
                   else False),
    ]


def _casts(result, label):
    return report.Row(
        '     orders stored, steps cast (in %d messages), %s'
        % (result['messages_queued'], label),
        '%d, %d' % (result['orders_stored'], result['steps_queued']),
        'a first step per order', None, 'equal',
        result['orders_stored'] == result['steps_queued'])


def _listing(result):
    listing = result['listing']
    first = listing['first']
    rows = []
    for name, label in (('first', 'first page'),
                        ('deep', 'page after a marker 90% deep')):
        figures = listing[name]
        plan = figures['plan']
        rows.append(report.Row(
            '44.8 GET /v1/orders?limit=100 p99, %s (%d orders, %d the '
            'project\'s)' % (label, listing['orders'],
                             listing['project_orders']),
            '%.1f ms' % figures['latency']['p99_ms'],
            'p50 %.1f ms, first page p99 %.1f ms' % (
                figures['latency']['p50_ms'], first['latency']['p99_ms']),
            _ratio(figures['latency']['p99_ms'],
                   first['latency']['p99_ms']),
            '(info), 0 failed', None if figures['failed'] == 0 else False))
        rows.append(report.Row(
            '     its plan: %s, %d rows read and dropped' % (
                'no sort' if not plan['sorts'] else 'SORTS',
                plan['rows_removed']),
            'reads %s' % plan['index'] if plan['uses_index']
            else 'DOES NOT read %s' % plan['index'],
            'EXPLAIN (ANALYZE) of list_orders', None,
            'by index, <= %d dropped' % _PAGE,
            plan['uses_index'] and not plan['sorts'] and
            plan['rows_removed'] <= _PAGE))
    bounded = listing['deep']['bounded_plan']
    rows.append(report.Row(
        '     deep page with created_at >= marker\'s added (the index\'s '
        'range start)', '%d rows dropped, %.1f ms' % (
            bounded['rows_removed'], bounded['execution_ms']),
        'as listed: %d rows dropped, %.1f ms' % (
            listing['deep']['plan']['rows_removed'],
            listing['deep']['plan']['execution_ms']),
        _ratio(bounded['execution_ms'],
               listing['deep']['plan']['execution_ms']), '(info)', None))
    return rows


def rows(result):
    """Every row of the REST API's measurement."""
    table = (_creates(result, 'PostgreSQL') + _latency(result) +
             [_casts(result, 'PostgreSQL')] + _listing(result))
    if 'mariadb' in result:
        table += (_creates(result['mariadb'], 'MariaDB', False) +
                  [_casts(result['mariadb'], 'MariaDB')])
    return table
