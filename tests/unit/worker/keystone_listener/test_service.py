"""``worker.keystone_listener.service.listener_conf``: the listener's
transport declares Keystone's exchange as Keystone does, while the
process's casts keep the project's durable queues."""

from oslo_config import cfg
import pytest

from worker import conf as worker_conf
from worker.keystone_listener import service
from worker import rpc


def _conf(tmp_path, text):
    path = tmp_path / 'barbican-retry.conf'
    path.write_text(text)
    conf = cfg.ConfigOpts()
    worker_conf.register_opts(conf)
    conf(['--config-file', str(path)], project='barbican-retry')
    return conf


@pytest.mark.parametrize('option, durable', [('', False),
                                             ('true', True)])
def test_the_listener_transport_has_its_own_durability(tmp_path, option,
                                                       durable):
    rpc.set_defaults()
    text = '[DEFAULT]\ntransport_url = rabbit://u:p@broker:5672/\n'
    if option:
        text += '[keystone_listener]\namqp_durable_queues = %s\n' % option
    conf = _conf(tmp_path, text)
    private = service.listener_conf(conf)
    assert private.oslo_messaging_rabbit.amqp_durable_queues is durable
    # The same files: the broker is the one the file names.
    assert private.config_file == conf.config_file
    assert 'DEFAULT' in private.list_all_sections()
    # The process's own configuration keeps the project's durable queues.
    conf.register_opts(rpc.amqp_driver.amqp_opts,
                       group='oslo_messaging_rabbit')
    assert conf.oslo_messaging_rabbit.amqp_durable_queues is True
