"""The benchmark's PNG plots, beside its table (``report``).

Apart from the table so that reading or testing the table needs no
matplotlib (a benchmark requirement, not the suite's).
"""

import os

import matplotlib

matplotlib.use('Agg')  # files only; never a display
from matplotlib import pyplot  # noqa: E402
from matplotlib import ticker  # noqa: E402


def _save(figure, axes, path, legend_size=8):
    """Put the legend on ``axes``, write ``figure`` to ``path``, free it."""
    axes.legend(fontsize=legend_size)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)


def plot_pass_cost(result, path):
    """Pass cost versus table size (log-log), with the targets."""
    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    styles = {'sqlite': 'tab:blue', 'postgresql': 'tab:orange',
              'mysql': 'tab:green'}
    for backend, colour in styles.items():
        records = sorted((r for r in result['records']
                          if r.get('backend') == backend),
                         key=lambda r: r['rows'])
        if not records:
            continue
        sizes = [r['rows'] for r in records]
        for key, style, label in (('pass_ms', '-o', 'pass'),
                                  ('due_query_ms', '--s', 'due query'),
                                  ('raw_select_ms', ':^', 'raw SELECT')):
            axes.plot(sizes, [r[key] for r in records], style, color=colour,
                      label='%s %s' % (backend, label))
    axes.axhline(2.0, color='tab:blue', linewidth=0.8, alpha=0.5)
    axes.axhline(5.0, color='tab:orange', linewidth=0.8, alpha=0.5)
    axes.set_xscale('log')
    axes.set_yscale('log')
    axes.set_xlabel('rows in order_retry_tasks (none due)')
    axes.set_ylabel('median time (ms)')
    axes.set_title('Cost of a pass that finds nothing due\n'
                   '(thin lines: targets 2 ms SQLite, 5 ms PostgreSQL '
                   'and MariaDB)')
    _save(figure, axes, path, legend_size=7)


def plot_lateness(result, path):
    """Lateness distributions (CDF), one daemon and K daemons."""
    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    for key, colour in (('one', 'tab:blue'), ('many', 'tab:green')):
        data = result[key]
        values = data['lateness']
        if not values:
            continue
        fractions = [(i + 1) / len(values) for i in range(len(values))]
        axes.plot(values, fractions, color=colour,
                  label='%d daemon(s): p99 %.2f s' % (data['daemons'],
                                                      data['p99']))
        axes.axvline(data['p99'], color=colour, linestyle=':')
    axes.axvline(result['one']['bound'], color='red', linestyle='--',
                 label='bound: period x (1+jitter) + pass = %.2f s'
                 % result['one']['bound'])
    axes.set_xlabel('lateness: cast arrival - retry_at (s)')
    axes.set_ylabel('fraction of rows')
    axes.set_title('Lateness of retries (period %ds)'
                   % result['one']['period'])
    _save(figure, axes, path)


def plot_dispatch(result, path):
    """Dispatch rate versus concurrency, with the kombu reference."""
    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    passes = result['sweep']['pass_sqlite']
    casts = result['sweep']['oslo_cast']
    axes.plot([p['cast_concurrency'] for p in passes],
              [p['rate'] for p in passes], '-o',
              label='one pass (SQLite), rows/s, by cast_concurrency')
    axes.plot([c['threads'] for c in casts], [c['rate'] for c in casts],
              '-s', label='oslo.messaging cast loop, messages/s, by threads')
    axes.axhline(result['kombu']['rate'], color='grey', linestyle='--',
                 label='kombu confirmed publish, messages/s, 1 connection')
    axes.set_xscale('log', base=2)
    axes.set_xticks([p['cast_concurrency'] for p in passes])
    axes.xaxis.set_major_formatter(ticker.ScalarFormatter())
    axes.set_xlabel('concurrent casts')
    axes.set_ylabel('per second (rows of a pass; messages)')
    axes.set_ylim(bottom=0)
    axes.set_title('Dispatch rate versus concurrency')
    _save(figure, axes, path)


def plot_memory(result, path):
    """The daemon's memory over time, after the backlog was loaded."""
    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    samples = result['samples']
    axes.plot([s[0] for s in samples], [s[1] for s in samples],
              label='RSS, process tree')
    axes.plot([s[0] for s in samples], [s[2] for s in samples],
              label='PSS, process tree')
    axes.axhline(100, color='red', linestyle='--', label='target 100 MB')
    axes.axvline(0, color='grey', linestyle=':')
    axes.set_xlabel('seconds since %d due rows were loaded' % result['rows'])
    axes.set_ylabel('MB')
    axes.set_ylim(bottom=0)
    axes.set_title('barbican-retry memory')
    _save(figure, axes, path)


_PLOTS = {
    'pass_cost': ('pass_cost.png', plot_pass_cost),
    'lateness': ('lateness.png', plot_lateness),
    'dispatch': ('dispatch_concurrency.png', plot_dispatch),
    'memory': ('memory.png', plot_memory),
}


def write_plots(results, directory):
    """Write the PNG of every measurement that has one; returns paths."""
    written = []
    for name, (filename, plot) in _PLOTS.items():
        if name in results and 'error' not in results[name]:
            path = os.path.join(directory, filename)
            plot(results[name], path)
            written.append(path)
    return written
