"""moto's S3 server on 127.0.0.1 over real HTTP, and a proxy in front of it that fails some
uploads with 503 SlowDown (S3's throttling answer), for the S3 tests."""

from __future__ import annotations

import http.client
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import boto3
from moto.server import ThreadedMotoServer

from datagen.engine.sim.server import free_port

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing-secret-never-logged",
    "AWS_DEFAULT_REGION": "us-east-1",
}
SLOW_DOWN = b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>'


@contextmanager
def moto_s3(bucket: str = "datagen-test") -> Iterator[str]:
    """Start moto's server; create a bucket; yield the endpoint URL."""
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    try:
        boto3.client(
            "s3",
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket=bucket)
        yield url
    finally:
        server.stop()


class FlakyProxy:
    """Forwards to `target`; every `every`-th PUT (objects and multipart parts) gets a 503."""

    def __init__(self, target: str, every: int = 3) -> None:
        host, port = target.removeprefix("http://").split(":")
        proxy = self
        self.puts = 0
        self.failed = 0
        self.lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.command == "PUT":
                    with proxy.lock:
                        proxy.puts += 1
                        fail = proxy.puts % every == 0
                        proxy.failed += fail
                    if fail:
                        self.send_response(503)
                        self.send_header("Content-Type", "application/xml")
                        self.send_header("Content-Length", str(len(SLOW_DOWN)))
                        self.end_headers()
                        self.wfile.write(SLOW_DOWN)
                        return
                conn = http.client.HTTPConnection(host, int(port), timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = f"{host}:{port}"
                conn.request(self.command, self.path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self) -> FlakyProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
