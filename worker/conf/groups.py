"""Registering an option group on one ConfigOpts."""

from oslo_config import cfg


def register_group_opts(conf, group, opts):
    """Register ``opts`` in a copy of ``group`` on ``conf``.

    oslo.config keeps option overrides in the ``OptGroup`` object; a copy
    per ``ConfigOpts`` keeps two configurations (tests, tools) apart.
    """
    conf.register_group(cfg.OptGroup(group.name, title=group.title,
                                     help=group.help))
    conf.register_opts(opts, group=group.name)
