"""A fake Cloud Storage JSON API (objects.get: metadata and `alt=media` download) on localhost HTTP.

Enough for google-cloud-storage's `Bucket.get_blob` + `Blob.download_as_*` through `STORAGE_EMULATOR_HOST`
(the client's own switch, like fake-gcs-server): GET /storage/v1/b/{bucket}/o/{object} returns the object
resource or 404; GET /download/storage/v1/b/{bucket}/o/{object}?alt=media returns the bytes.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, unquote, urlparse


class FakeStorage:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], bytes] = {}
        self._server: ThreadingHTTPServer | None = None

    def put(self, uri: str, data: bytes) -> None:
        bucket, _, name = uri.removeprefix("gs://").partition("/")
        self.objects[(bucket, name)] = data

    def start(self) -> str:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlparse(self.path)
                media = url.path.startswith("/download/")
                path = url.path.removeprefix("/download")
                prefix = "/storage/v1/b/"
                bucket, _, rest = path.removeprefix(prefix).partition("/o/")
                key = (bucket, unquote(rest))
                if not path.startswith(prefix) or key not in fake.objects:
                    return self._reply(404, json.dumps({"error": {"code": 404, "message": "No such object"}}))
                data = fake.objects[key]
                if media:
                    return self._reply(200, data, "application/octet-stream")
                host = f"http://{self.headers['Host']}"
                resource = {
                    "kind": "storage#object",
                    "bucket": bucket,
                    "name": key[1],
                    "size": str(len(data)),
                    "generation": "1",
                    "mediaLink": f"{host}/download{prefix}{bucket}/o/{quote(key[1], safe='')}?alt=media",
                }
                return self._reply(200, json.dumps(resource))

            def _reply(self, code: int, body: str | bytes, kind: str = "application/json") -> None:
                data = body.encode() if isinstance(body, str) else body
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A short poll interval: shutdown() waits for it, and every provider test stops one of these.
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        ).start()
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
