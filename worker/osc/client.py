"""The HTTP client of the ``openstack retry`` commands.

A keystoneauth1 ``Adapter`` over the session OSC made: it adds the token,
retries connection failures as keystoneauth does, and asks for the API
microversion in ``OpenStack-API-Version``. An error reply becomes a
``CommandError`` carrying the API's own code and detail, so that a script
sees ``retry.order_not_found`` rather than a bare status.
"""

from urllib import parse

from keystoneauth1 import adapter
from osc_lib import exceptions

SERVICE_TYPE = 'retry'
MICROVERSION = '1.0'


class Client:
    """The ``/v1`` resources of ``barbican-retry-api`` that OSC uses."""

    def __init__(self, session, endpoint):
        self._http = adapter.Adapter(
            session, service_type=SERVICE_TYPE, endpoint_override=endpoint,
            default_microversion=MICROVERSION)

    def create_order(self, body, idempotency_key=None):
        """POST an order; the order (new, or the one the key names)."""
        headers = {'Idempotency-Key': idempotency_key} if idempotency_key \
            else {}
        return self._call('POST', '/v1/orders', json=body, headers=headers)

    def list_orders(self, filters, limit=None, marker=None):
        """The orders matching ``filters``, following ``next`` links.

        With ``limit``, one page of at most that many; without it, every
        page.
        """
        params = dict(filters)
        if marker:
            params['marker'] = marker
        if limit is not None:
            params['limit'] = limit
            return self._call('GET', '/v1/orders', params=params)['orders']
        orders = []
        query = params
        while query is not None:
            page = self._call('GET', '/v1/orders', params=query)
            orders.extend(page['orders'])
            query = _next_query(page)
        return orders

    def get_order(self, order_id):
        """One order, with its steps."""
        return self._call('GET', '/v1/orders/%s' % _segment(order_id))

    def cancel_order(self, order_id):
        """Cancel an order; the order as it is now."""
        return self._call('POST', '/v1/orders/%s/cancel' % _segment(order_id),
                          json={})

    def resume_order(self, order_id):
        """Resume an ERROR order; the order as it is now."""
        return self._call('POST', '/v1/orders/%s/resume' % _segment(order_id),
                          json={})

    def order_history(self, order_id):
        """Every run of the order's steps that ended, oldest first."""
        return self._call(
            'GET', '/v1/orders/%s/history' % _segment(order_id))['history']

    def order_types(self):
        """The installed order types."""
        return self._call('GET', '/v1/order-types')['order_types']

    def _call(self, method, url, **kwargs):
        response = self._http.request(url, method, raise_exc=False, **kwargs)
        if response.status_code >= 400:
            raise exceptions.CommandError(_error_text(response))
        return response.json()


def _next_query(page):
    """The query of ``page``'s ``next`` link, or None on the last page.

    Only the query is followed, on the endpoint: the token never goes to
    a host the link names, and the path the API built (with the prefix
    a proxy in front gave it) is not joined to the endpoint's own.
    """
    link = page.get('next')
    if not link:
        return None
    return parse.parse_qsl(parse.urlsplit(link).query,
                           keep_blank_values=True)


def _segment(order_id):
    """``order_id`` as one path segment: nothing of it can leave it."""
    return parse.quote(order_id, safe='')


def _error_text(response):
    """The API's error as one line: ``CODE (STATUS): DETAIL``."""
    try:
        error = response.json()['errors'][0]
        return '%s (HTTP %s): %s' % (error['code'], error['status'],
                                     error.get('detail') or error['title'])
    except (ValueError, KeyError, IndexError, TypeError):
        return 'HTTP %s: %s' % (response.status_code,
                                response.text[:200].strip() or 'no detail')
