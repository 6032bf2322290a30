"""Policy in code: the secure-RBAC personas of the REST API.

- a project **reader** reads its project's orders, schedules and the
  order types;
- a project **member** also creates, cancels, resumes and signals orders
  and creates and deletes schedules;
- an **admin** sees and acts on every project's, and alone manages the
  notification URLs and their secrets.

The defaults are registered here (``list_rules``, the entry point
``oslo.policy.policies`` of ``oslopolicy-sample-generator --namespace
barbican-retry``); a policy file (``[oslo_policy] policy_file``) overrides
any of them. Another project's order is not found (404) rather than
forbidden: the REST layer asks ``worker.api`` within the caller's
project unless ``retry:all_projects`` allows every project.
"""

from oslo_config import cfg
from oslo_policy import policy

#: The persona check strings, as keystone's and nova's base rules.
ADMIN = 'role:admin'
PROJECT_READER = 'role:reader and project_id:%(project_id)s'
PROJECT_MEMBER = 'role:member and project_id:%(project_id)s'
PROJECT_READER_OR_ADMIN = 'rule:admin_api or rule:project_reader'
PROJECT_MEMBER_OR_ADMIN = 'rule:admin_api or rule:project_member'

ALL_PROJECTS = 'retry:all_projects'

_BASE = [
    policy.RuleDefault('admin_api', ADMIN,
                       description='An administrator of the service.'),
    policy.RuleDefault('project_reader', PROJECT_READER,
                       description='A reader of the project.'),
    policy.RuleDefault('project_member', PROJECT_MEMBER,
                       description='A member of the project.'),
]


def _rule(name, check_str, description, operations):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': method, 'path': path}
                    for method, path in operations],
        scope_types=['project'])


_RULES = [
    _rule(ALL_PROJECTS, 'rule:admin_api',
          'See and act on the orders and schedules of every project '
          '(without it, a caller sees its own project only, and another '
          'project\'s order is not found).',
          [('GET', '/v1/orders'), ('GET', '/v1/schedules')]),
    _rule('retry:order:create', PROJECT_MEMBER_OR_ADMIN,
          'Create an order in the caller\'s project.',
          [('POST', '/v1/orders')]),
    _rule('retry:order:list', PROJECT_READER_OR_ADMIN, 'List orders.',
          [('GET', '/v1/orders')]),
    _rule('retry:order:get', PROJECT_READER_OR_ADMIN, 'Show an order.',
          [('GET', '/v1/orders/{order_id}')]),
    _rule('retry:order:history', PROJECT_READER_OR_ADMIN,
          'Show the runs of an order\'s steps.',
          [('GET', '/v1/orders/{order_id}/history')]),
    _rule('retry:order:cancel', PROJECT_MEMBER_OR_ADMIN, 'Cancel an order.',
          [('POST', '/v1/orders/{order_id}/cancel')]),
    _rule('retry:order:resume', PROJECT_MEMBER_OR_ADMIN,
          'Resume an ERROR order.',
          [('POST', '/v1/orders/{order_id}/resume')]),
    _rule('retry:order_type:list', PROJECT_READER_OR_ADMIN,
          'List the order types and their metadata schemas.',
          [('GET', '/v1/order-types')]),
    _rule('retry:schedule:create', PROJECT_MEMBER_OR_ADMIN,
          'Create a schedule of periodic orders.',
          [('POST', '/v1/schedules')]),
    _rule('retry:schedule:list', PROJECT_READER_OR_ADMIN, 'List schedules.',
          [('GET', '/v1/schedules')]),
    _rule('retry:schedule:get', PROJECT_READER_OR_ADMIN, 'Show a schedule.',
          [('GET', '/v1/schedules/{schedule_id}')]),
    _rule('retry:schedule:delete', PROJECT_MEMBER_OR_ADMIN,
          'Delete a schedule.',
          [('DELETE', '/v1/schedules/{schedule_id}')]),
    _rule('retry:schedule:trigger', PROJECT_MEMBER_OR_ADMIN,
          'Create an order of a schedule now, outside its ticks.',
          [('POST', '/v1/schedules/{schedule_id}/trigger')]),
    _rule('retry:notification_url:list', 'rule:admin_api',
          'List the notification URLs (never their secrets).',
          [('GET', '/v1/notification-urls')]),
    _rule('retry:notification_url:set_owner', 'rule:admin_api',
          'Choose which project\'s orders may name a URL.',
          [('PUT', '/v1/notification-urls/{url_id}/owner')]),
    _rule('retry:notification_url:set_secret', 'rule:admin_api',
          'Set or rotate a URL\'s signing secret (never read back).',
          [('PUT', '/v1/notification-urls/{url_id}/secret')]),
    _rule('retry:project_quota:list', 'rule:admin_api',
          'List the projects whose quota of PENDING orders was overridden.',
          [('GET', '/v1/project-quotas')]),
    _rule('retry:project_quota:get', PROJECT_READER_OR_ADMIN,
          'Show a project\'s quota of PENDING orders.',
          [('GET', '/v1/project-quotas/{project_id}')]),
    _rule('retry:project_quota:set', 'rule:admin_api',
          'Override a project\'s quota of PENDING orders.',
          [('PUT', '/v1/project-quotas/{project_id}')]),
    _rule('retry:project_quota:delete', 'rule:admin_api',
          'Drop the override of a project\'s quota: the default applies.',
          [('DELETE', '/v1/project-quotas/{project_id}')]),
    _rule('retry:order:signal', PROJECT_MEMBER_OR_ADMIN,
          'Send a signal to a PENDING order (its waiting step runs).',
          [('POST', '/v1/orders/{order_id}/signals')]),
    _rule('retry:order:bulk', PROJECT_MEMBER_OR_ADMIN,
          'Cancel, resume or reprioritize the orders that match a filter: '
          'a member those of its own project, an admin (with '
          'retry:all_projects) every project\'s.',
          [('POST', '/v1/orders/bulk-actions')]),
    _rule('retry:pause:list', 'rule:admin_api',
          'List what is paused (order types, topics, resource keys, '
          'orders, schedules).',
          [('GET', '/v1/pauses')]),
    _rule('retry:pause:set', 'rule:admin_api',
          'Pause an order type, a topic, a resource key or a schedule.',
          [('PUT', '/v1/pauses/{target}/{name}')]),
    _rule('retry:pause:delete', 'rule:admin_api',
          'Unpause an order type, a topic, a resource key or a schedule.',
          [('DELETE', '/v1/pauses/{target}/{name}')]),
    _rule('retry:order:pause', PROJECT_MEMBER_OR_ADMIN,
          'Pause an order (another project\'s is not found).',
          [('PUT', '/v1/pauses/order/{order_id}')]),
    _rule('retry:order:unpause', PROJECT_MEMBER_OR_ADMIN,
          'Unpause an order (another project\'s is not found).',
          [('DELETE', '/v1/pauses/order/{order_id}')]),
]


def list_rules():
    """Every default rule (the ``oslo.policy.policies`` entry point)."""
    return _BASE + _RULES


def enforcer(conf):
    """An ``oslo_policy.policy.Enforcer`` on ``conf`` with the defaults
    registered; ``[oslo_policy] policy_file`` overrides them."""
    built = policy.Enforcer(conf)
    built.register_defaults(list_rules())
    return built


def get_enforcer():
    """The enforcer of ``oslopolicy-*`` tools (the ``oslo.policy.enforcer``
    entry point), on ``cfg.CONF`` parsed from no files of its own."""
    cfg.CONF([], project='barbican-retry')
    return enforcer(cfg.CONF)
