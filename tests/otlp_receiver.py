"""A real OTLP/HTTP receiver on loopback: decodes what exporters POST with ``opentelemetry-proto``."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    service: str
    attributes: dict[str, object]
    status_code: int


@dataclass
class Received:
    spans: list[ReceivedSpan] = field(default_factory=list)
    metric_names: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wait_for(self, count: int, names: set[str], timeout: float = 30.0) -> list[ReceivedSpan]:
        """Spans once at least ``count`` with a name in ``names`` have arrived (or what came by then)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if sum(1 for s in self.spans if s.name in names) >= count:
                    return list(self.spans)
            time.sleep(0.05)
        with self.lock:
            return list(self.spans)


def _value(value: AnyValue) -> object:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


def _handler(received: Received) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path == "/v1/traces":
                request = ExportTraceServiceRequest.FromString(body)
                spans = []
                for resource_spans in request.resource_spans:
                    resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
                    for scope in resource_spans.scope_spans:
                        for span in scope.spans:
                            spans.append(
                                ReceivedSpan(
                                    name=span.name,
                                    trace_id=span.trace_id.hex(),
                                    span_id=span.span_id.hex(),
                                    parent_span_id=span.parent_span_id.hex(),
                                    service=str(resource.get("service.name")),
                                    attributes={a.key: _value(a.value) for a in span.attributes},
                                    status_code=span.status.code,
                                )
                            )
                with received.lock:
                    received.spans.extend(spans)
            elif self.path == "/v1/metrics":
                metrics = ExportMetricsServiceRequest.FromString(body)
                names = {m.name for r in metrics.resource_metrics for s in r.scope_metrics for m in s.metrics}
                with received.lock:
                    received.metric_names |= names
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            return None

    return Handler


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, Received]]:
    """``(endpoint, received)``: set ``OTEL_EXPORTER_OTLP_ENDPOINT`` to the endpoint."""
    received = Received()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(received))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
