"""Certificate plugins, loaded by name through stevedore entry points."""

import functools

from stevedore import driver

NAMESPACE = 'barbican_retry.certificate.plugins'


# Looking an entry point up costs milliseconds; each step builds its
# plugin, and the installed classes do not change while a process runs.
@functools.lru_cache(maxsize=None)
def load_class(name):
    """Return the plugin class registered under ``name``.

    :raises stevedore.exception.NoMatches: no such plugin is installed.
    """
    return driver.DriverManager(NAMESPACE, name, invoke_on_load=False).driver


def instantiate(plugin_class, conf):
    """Build a plugin with the current values of its own options.

    Called for each step, so options changed by a reload apply at once and
    the plugin itself never reads configuration.
    """
    if not plugin_class.option_group:
        return plugin_class()
    group = conf[plugin_class.option_group]
    return plugin_class(**{name: group[name]
                           for name in plugin_class.option_names})
