"""The ``[scheduler]`` group: the retry daemon's timer, lock and batches."""

from oslo_config import cfg

from worker.conf import groups
from worker import rpcapi

scheduler_group = cfg.OptGroup(
    'scheduler', title='Retry scheduler options',
    help='Options of barbican-retry, the daemon that re-enqueues due retry '
         'tasks to the worker pool.')

scheduler_opts = [
    cfg.IntOpt('schedule_period_seconds',
               default=15, min=1, max=86400,
               mutable=True,
               help='Seconds between two passes of the retry scheduler. '
                    'Each pass takes the OrderRetryTask lock, casts the '
                    'due retry tasks to the workers and deletes them. '
                    'A retry fires at most about one period (plus jitter '
                    'and the pass itself) after its retry_at.'),
    cfg.FloatOpt('schedule_jitter',
                 default=0.2, min=0.0, max=0.5,
                 mutable=True,
                 help='The live daemons share each period: with K of them, '
                      'one passes every schedule_period_seconds / K, each '
                      'in its own slot. Each pass is moved by a random '
                      'amount of up to half this fraction of that gap, '
                      'earlier or later, so that passes do not fall in '
                      'step with other periodic work. 0.2 with one daemon '
                      'and a 15 s period puts passes 12 to 18 s apart.'),
    cfg.FloatOpt('min_pass_gap_seconds',
                 default=0.1, min=0.05, max=3600,
                 mutable=True,
                 help='After a pass, a daemon plans its next one at its '
                      'slot, or sooner when a retry waiting then falls due '
                      'before the slot, so that such a retry is cast about '
                      'when it falls due; but never sooner than this after '
                      'the start of its previous pass, which bounds the '
                      'passes a daemon makes when retries fall due at many '
                      'different moments. A retry written during the wait '
                      'is cast at the planned pass; rows already due and '
                      'left over by a pass (a cast failed, '
                      'max_pass_seconds) wait for the next slot.'),
    cfg.IntOpt('retry_lock_timeout_seconds',
               default=300, min=1, max=86400,
               mutable=True,
               help='Age after which an OrderRetryTask lock row is '
                    'considered stale (its holder died) and is cleared by '
                    'the next daemon. Must exceed the longest pass: at '
                    'least twice max_pass_seconds plus '
                    'cast_timeout_seconds, which is checked at start.'),
    cfg.IntOpt('dispatch_deadline_seconds',
               default=300, min=1, max=86400,
               mutable=True,
               help='An order whose step was cast this long ago and that '
                    'no worker has taken up (the cast was lost, or the '
                    'worker died before claiming it) is dispatched again '
                    'by the next pass, under a new token so that the lost '
                    'message, should it arrive, has no effect. Keep it '
                    'well above the time a cast may wait in the queue at '
                    'peak load.'),
    cfg.IntOpt('max_pass_seconds',
               default=60, min=1, max=3600,
               mutable=True,
               help='A pass starts no new batch after running this long; '
                    'the remaining due rows wait for the next pass. '
                    'Bounds how long the lock is held.'),
    cfg.IntOpt('batch_size',
               default=500, min=1, max=10000,
               mutable=True,
               help='Due rows read, cast and deleted per batch. Each batch '
                    'is one short transaction that renews the lock and '
                    'deletes the rows it cast.'),
    cfg.IntOpt('cast_concurrency',
               default=8, min=1, max=64,
               mutable=True,
               help='Casts in flight at once within a batch.'),
    cfg.IntOpt('rows_per_cast',
               default=50, min=1, max=rpcapi.MAX_STEPS_PER_MESSAGE,
               mutable=True,
               help='Due rows carried by one message to the workers (RPC '
                    '1.1 run_steps; upgrade the workers first), which run '
                    'them concurrently. A batch is split into near-equal '
                    'messages of at most this many rows, and into at least '
                    'cast_concurrency messages when it has that many rows. '
                    '1 sends a message per row.'),
    cfg.IntOpt('cast_timeout_seconds',
               default=10, min=1, max=600,
               mutable=True,
               help='Longest time one cast may take, reconnections to the '
                    'broker included. A cast that fails or times out '
                    'leaves its row for the next pass.'),
    cfg.IntOpt('schedule_check_seconds',
               default=5, min=1, max=3600,
               mutable=True,
               help='Longest wait between two looks of a retry daemon at '
                    'the schedules of periodic orders (barbican-retry-'
                    'manage schedule create): a schedule created or '
                    'deleted is seen this late at most. Between looks a '
                    'daemon wakes at the next tick of any schedule, so '
                    'ticks are not late by this much; each look is one '
                    'indexed read.'),
    cfg.IntOpt('schedule_backfill_max_runs',
               default=1, min=1, max=1000,
               mutable=True,
               help='Of the ticks of a schedule missed while every retry '
                    'daemon was down, how many (the latest) make an order '
                    'each when a daemon returns; the ones before make '
                    'none. 1, the default, makes one order for the latest '
                    'missed tick. Applies to the schedules whose overlap '
                    'policy is allow; under the other policies one order '
                    'is made, since the second would find the first still '
                    'open.'),
    cfg.IntOpt('pause_alert_age_seconds',
               default=86400, min=60, max=365 * 86400,
               mutable=True,
               help='A pause (barbican-retry-manage ... pause) older than '
                    'this is counted in the gauge '
                    'barbican_retry_pauses_too_old, on which the alert '
                    'BarbicanRetryPausedTooLong fires: a pause forgotten '
                    'after a maintenance holds its steps for ever. Read '
                    'at each census (every report_interval, metrics '
                    'enabled).'),
]


def register_opts(conf):
    """Register the ``[scheduler]`` options."""
    groups.register_group_opts(conf, scheduler_group, scheduler_opts)


def list_opts():
    """Return the ``[scheduler]`` options for oslo-config-generator."""
    return [(scheduler_group, scheduler_opts)]


def validate(conf):
    """Check option combinations that single-option bounds cannot express.

    :raises ValueError: naming the option whose value is inconsistent.
    """
    group = conf.scheduler
    worst_pass = 2 * group.max_pass_seconds + group.cast_timeout_seconds
    if group.retry_lock_timeout_seconds <= worst_pass:
        raise ValueError(
            '[scheduler] retry_lock_timeout_seconds (%d) must exceed twice '
            '[scheduler] max_pass_seconds plus [scheduler] '
            'cast_timeout_seconds (%d), or a live daemon\'s lock could be '
            'cleared as stale during its pass.'
            % (group.retry_lock_timeout_seconds, worst_pass))
