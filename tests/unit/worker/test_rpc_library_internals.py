"""oslo.messaging internals that worker/rpc.py relies on.

oslo.messaging has no public way to change the default of one of its
options for every ConfigOpts and for oslo-config-generator alike, so
``set_defaults()`` changes the private option lists themselves:
``oslo_messaging._drivers.amqp.amqp_opts`` (``amqp_durable_queues``) and
``oslo_messaging._drivers.impl_rabbit.rabbit_opts``
(``rabbit_interval_max``). ``executor_threads()`` registers and reads
``oslo_messaging.server._pool_opts`` (``executor_thread_pool_size``, whose
default is oslo.messaging's). ``worker/intake.py`` overrides the RPC
server's ``_on_incoming`` and ``_process_incoming``, the two methods a
message passes through between the listener and the executor.

Each test checks one of these by behaviour and names, when it fails, the
library change and the code that depends on it. The versions they were
checked on are written beside the bounds in requirements.txt.
"""

import importlib

import futurist
from oslo_config import cfg
import oslo_messaging as messaging
import pytest

_SET_DEFAULTS = 'worker/rpc.py set_defaults()'
_EXECUTOR_THREADS = 'worker/rpc.py executor_threads()'
_INTAKE = 'worker/intake.py BoundedRPCServer'

# A broker nobody listens on: building the rabbit driver connects nowhere.
_RABBIT_URL = 'rabbit://guest:guest@127.0.0.1:1/'


def _internal(module_name, attribute, option, users):
    """Return the option list ``module_name.attribute`` and its ``option``.

    Fails with a message naming the change and ``users`` (``'... relies'``)
    otherwise.
    """
    where = '%s.%s' % (module_name, attribute)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        pytest.fail('oslo.messaging no longer has the module %s (%s): %s '
                    'on %s' % (module_name, exc, users, where))
    opts = getattr(module, attribute, None)
    if opts is None:
        pytest.fail('oslo.messaging no longer has %s: %s on it'
                    % (where, users))
    names = [getattr(opt, 'dest', None) for opt in opts]
    if option not in names:
        pytest.fail('oslo.messaging no longer has %s in %s (it holds %s): '
                    '%s on it' % (option, where, names, users))
    return opts, opts[names.index(option)]


def _amqp_opts():
    return _internal('oslo_messaging._drivers.amqp', 'amqp_opts',
                     'amqp_durable_queues', _SET_DEFAULTS + ' relies')


def _rabbit_opts():
    return _internal('oslo_messaging._drivers.impl_rabbit', 'rabbit_opts',
                     'rabbit_interval_max', _SET_DEFAULTS + ' relies')


def _pool_opts():
    return _internal('oslo_messaging.server', '_pool_opts',
                     'executor_thread_pool_size',
                     _EXECUTOR_THREADS + ' relies')


def _rpc():
    """worker.rpc, once the internals it uses are known to be there."""
    _amqp_opts()
    _rabbit_opts()
    _pool_opts()
    try:
        return importlib.import_module('worker.rpc')
    except (ImportError, AttributeError) as exc:
        pytest.fail('worker/rpc.py no longer imports: oslo.messaging '
                    'changed _drivers.amqp or server, which it imports for '
                    'amqp_opts and _pool_opts: %s' % exc)


@pytest.fixture
def conf():
    conf = cfg.ConfigOpts()
    conf([], default_config_files=[])
    return conf


def test_amqp_opts_hold_amqp_durable_queues():
    """The list set_defaults() changes still holds the boolean option."""
    _, opt = _amqp_opts()
    assert isinstance(opt, cfg.BoolOpt), (
        'oslo.messaging: _drivers.amqp.amqp_opts amqp_durable_queues is no '
        'longer a BoolOpt (%r): %s sets it to True'
        % (opt, _SET_DEFAULTS))


def _rabbit_option(conf, name):
    """``[oslo_messaging_rabbit] name`` once the rabbit driver is built."""
    transport = _rpc().get_transport(conf, url=_RABBIT_URL)
    try:
        return getattr(conf.oslo_messaging_rabbit, name)
    finally:
        transport.cleanup()


def test_the_rabbit_driver_reads_the_durable_queues_default(conf):
    """The rabbit driver registers those very options, default included."""
    durable = _rabbit_option(conf, 'amqp_durable_queues')
    assert durable is True, (
        "oslo.messaging's rabbit driver no longer registers "
        '_drivers.amqp.amqp_opts: [oslo_messaging_rabbit] '
        'amqp_durable_queues reads %r after %s set its default to True, '
        'so queues are no longer durable' % (durable, _SET_DEFAULTS))


@pytest.mark.parametrize('name, value, consequence', [
    ('rabbit_interval_max', 5,
     'workers may consume again up to 30 s after a broker outage'),
    ('rabbit_qos_prefetch_count', 64,
     'a worker with no room for steps (%s) lets the broker push it the '
     'whole backlog' % _INTAKE),
])
def test_the_rabbit_driver_reads_the_defaults_of_its_options(
        conf, name, value, consequence):
    """The rabbit driver reads the reconnection bound and the prefetch
    set_defaults() sets."""
    read = _rabbit_option(conf, name)
    assert read == value, (
        "oslo.messaging's rabbit driver no longer reads "
        '_drivers.impl_rabbit.rabbit_opts: %s reads %r after %s set its '
        'default to %r, so %s' % (name, read, _SET_DEFAULTS, value,
                                  consequence))


def test_the_rpc_server_hands_messages_over_where_intake_waits():
    """The two methods worker/intake.py overrides are still there, and
    get_rpc_server still builds the server_cls it is given."""
    rpc_server = importlib.import_module('oslo_messaging.rpc.server')
    for name in ('_on_incoming', '_process_incoming'):
        assert callable(getattr(rpc_server.RPCServer, name, None)), (
            'oslo.messaging: rpc.server.RPCServer no longer has %s, '
            'which %s overrides to bound the steps a worker holds'
            % (name, _INTAKE))
    built = []

    class Recording(rpc_server.RPCServer):
        def __init__(self, *args, **kwargs):
            built.append(args)
            super().__init__(*args, **kwargs)

    transport = messaging.get_rpc_transport(cfg.ConfigOpts(), url='fake:')
    messaging.get_rpc_server(transport, messaging.Target(topic='t',
                                                         server='s'),
                             [object()], server_cls=Recording)
    transport.cleanup()
    assert built, ('oslo.messaging: get_rpc_server no longer builds its '
                   'server_cls: %s is passed as one' % _INTAKE)


def test_the_sample_config_shows_durable_queues():
    """oslo-config-generator lists the changed default."""
    rpc = _rpc()
    rpc.set_defaults()
    messaging_opts = importlib.import_module('oslo_messaging.opts')
    listed = dict(messaging_opts.list_opts())
    opts = {opt.dest: opt for opt in listed['oslo_messaging_rabbit']}
    opt = opts.get('amqp_durable_queues')
    assert opt is not None and opt.default is True, (
        'oslo.messaging list_opts() no longer lists the default %s sets '
        'on _drivers.amqp.amqp_opts (amqp_durable_queues=True): '
        'oslo-config-generator reads it (it lists %r)'
        % (_SET_DEFAULTS, opt))


def test_pool_opts_hold_executor_thread_pool_size():
    """The list executor_threads() registers and reads."""
    _, opt = _pool_opts()
    assert isinstance(opt, cfg.IntOpt), (
        'oslo.messaging: server._pool_opts executor_thread_pool_size is no '
        'longer an IntOpt (%r): %s returns it' % (opt, _EXECUTOR_THREADS))


def test_the_rpc_server_runs_as_many_threads_as_executor_threads(
        conf, monkeypatch):
    """The server's executor has executor_threads() workers (64)."""
    rpc = _rpc()
    sizes = []
    init = futurist.ThreadPoolExecutor.__init__

    def recording_init(self, max_workers=None, *args, **kwargs):
        sizes.append(max_workers)
        init(self, max_workers, *args, **kwargs)

    monkeypatch.setattr(futurist.ThreadPoolExecutor, '__init__',
                        recording_init)
    transport = messaging.get_rpc_transport(conf, url='fake:')
    server = rpc.get_server(transport, 'library-internals', 'host-a',
                            [object()])
    server.start()
    server.stop()
    server.wait()
    transport.cleanup()
    threads = rpc.executor_threads(conf)
    assert threads == 64, (
        "%s returns %r, not oslo.messaging's default of 64 that the "
        'worker is measured with (worker/rpc.py set_defaults())'
        % (_EXECUTOR_THREADS, threads))
    assert sizes == [threads], (
        "oslo.messaging's RPC server no longer sizes its threading "
        'executor (futurist.ThreadPoolExecutor) from [DEFAULT] '
        'executor_thread_pool_size of server._pool_opts (executors asked '
        'for: %r): %s counts on it for the '
        'number of steps a worker runs at once (worker/service.py)'
        % (sizes, _EXECUTOR_THREADS))


def test_every_option_group_oslo_messaging_keeps_on_cfg_conf_is_on_ours():
    """A transport on a ConfigOpts of its own gets every group that
    oslo.messaging registers on the global CONF only, or its casts fail
    ("no such option oslo_messaging_tracing"); worker/rpc.py
    register_global_only_opts() names them."""
    importlib.import_module('oslo_messaging.rpc.client')
    own = cfg.ConfigOpts()
    own([], default_config_files=[])
    # The rabbit driver, as deployed: a driver registers its own group
    # (oslo_messaging_rabbit) on the ConfigOpts its transport is built on,
    # and another test of this process may have built one on cfg.CONF.
    # Nothing connects before a message is sent.
    transport = _rpc().get_transport(own, url=_RABBIT_URL)
    transport.cleanup()
    missing = [name for name in cfg.CONF
               if name.startswith('oslo_messaging') and name not in own]
    assert missing == [], (
        'oslo.messaging registers %s on cfg.CONF only: add them to '
        'worker/rpc.py _GLOBAL_ONLY_OPTS' % missing)
