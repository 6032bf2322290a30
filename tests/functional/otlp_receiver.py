"""A real OTLP/HTTP traces receiver on 127.0.0.1, for the tests.

It takes what an OpenTelemetry Collector takes on ``/v1/traces``: a POST
of a protobuf ``ExportTraceServiceRequest`` (decoded with
``opentelemetry-proto``), answered with an empty
``ExportTraceServiceResponse``; and keeps each span with the service name
of its resource.
"""

import dataclasses
import gzip

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from tests.functional import receiver

PATH = '/v1/traces'


@dataclasses.dataclass(frozen=True)
class Span:
    """A span received; ids in lowercase hex, ``parent_id`` '' at a
    root."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    service: str
    attributes: dict


class OTLPReceiver(receiver.Receiver):
    """One receiver; ``url`` is its traces URL. It listens and stops as
    the webhook receiver does (``start``, ``stop``)."""

    def __init__(self):
        super().__init__(secret=None)
        self.spans = []
        self.url = 'http://127.0.0.1:%d%s' % (self.port, PATH)

    def _handle(self, request):
        body = request.rfile.read(int(request.headers['Content-Length']))
        if request.headers.get('Content-Encoding') == 'gzip':
            body = gzip.decompress(body)
        if request.path != PATH or request.headers.get(
                'Content-Type') != 'application/x-protobuf':
            request.send_response(404)
            request.end_headers()
            return
        export = trace_service_pb2.ExportTraceServiceRequest()
        export.ParseFromString(body)
        with self._lock:
            self.spans.extend(_spans(export))
        answer = trace_service_pb2.ExportTraceServiceResponse()
        payload = answer.SerializeToString()
        request.send_response(200)
        request.send_header('Content-Type', 'application/x-protobuf')
        request.send_header('Content-Length', str(len(payload)))
        request.end_headers()
        request.wfile.write(payload)

    def received(self):
        """The spans received so far."""
        with self._lock:
            return list(self.spans)


def _spans(export):
    for resource_spans in export.resource_spans:
        service = _attributes(resource_spans.resource.attributes).get(
            'service.name', '')
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield Span(span.trace_id.hex(), span.span_id.hex(),
                           span.parent_span_id.hex(), span.name, service,
                           _attributes(span.attributes))


def _attributes(values):
    found = {}
    for value in values:
        kind = value.value.WhichOneof('value')
        found[value.key] = getattr(value.value, kind) if kind else None
    return found
