"""The plugin module that python-openstackclient loads for ``retry``.

OSC finds it through the ``openstack.cli.extension`` entry point and
calls ``build_option_parser`` and ``make_client`` (the interface of
osc-lib's plugins). The endpoint is the catalog's ``retry`` service, or
``retry_endpoint_override`` in ``clouds.yaml`` (or the variable
``OS_RETRY_ENDPOINT_OVERRIDE``).
"""

from osc_lib import utils

from worker.osc import client

API_NAME = 'retry'
API_VERSION_OPTION = 'os_retry_api_version'
DEFAULT_API_VERSION = '1'
API_VERSIONS = {'1': 'worker.osc.client.Client'}


def make_client(instance):
    """Build the ``retry`` client on the session OSC authenticated."""
    endpoint = instance.get_endpoint_for_service_type(
        client.SERVICE_TYPE, region_name=instance.region_name,
        interface=instance.interface)
    return client.Client(instance.session, endpoint)


def build_option_parser(parser):
    """Add ``--os-retry-api-version`` to the global options."""
    parser.add_argument(
        '--os-retry-api-version', metavar='<retry-api-version>',
        default=utils.env('OS_RETRY_API_VERSION',
                          default=DEFAULT_API_VERSION),
        help='Retry API version, default=%s (Env: OS_RETRY_API_VERSION)'
        % DEFAULT_API_VERSION)
    return parser
