"""A fake Cloud Storage JSON API (objects.get, objects.list, multipart objects.insert) on localhost HTTP.

Enough for google-cloud-storage's `Bucket.get_blob` + `Blob.download_as_*`, `Client.list_blobs` (prefix and
delimiter) and `Blob.upload_from_string` through `STORAGE_EMULATOR_HOST` (the client's own switch, like
fake-gcs-server), as the JSON API documents them: GET /storage/v1/b/{bucket}/o/{object} returns the object
resource or 404; GET /download/storage/v1/b/{bucket}/o/{object}?alt=media returns the bytes; GET
/storage/v1/b/{bucket}/o?prefix=P&delimiter=/ lists `items` and the `prefixes` one level down; POST
/upload/storage/v1/b/{bucket}/o?uploadType=multipart stores a multipart/related body (metadata, then data).
"""

from __future__ import annotations

import json
import threading
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlparse


class FakeStorage:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], bytes] = {}
        self._server: ThreadingHTTPServer | None = None

    def put(self, uri: str, data: bytes) -> None:
        bucket, _, name = uri.removeprefix("gs://").partition("/")
        self.objects[(bucket, name)] = data

    def get(self, uri: str) -> bytes | None:
        bucket, _, name = uri.removeprefix("gs://").partition("/")
        return self.objects.get((bucket, name))

    def start(self) -> str:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlparse(self.path)
                media = url.path.startswith("/download/")
                path = url.path.removeprefix("/download")
                prefix = "/storage/v1/b/"
                if path.startswith(prefix) and path.endswith("/o"):
                    return self._list(path.removeprefix(prefix).removesuffix("/o"), parse_qs(url.query))
                bucket, _, rest = path.removeprefix(prefix).partition("/o/")
                key = (bucket, unquote(rest))
                if not path.startswith(prefix) or key not in fake.objects:
                    return self._reply(404, json.dumps({"error": {"code": 404, "message": "No such object"}}))
                if media:
                    return self._reply(200, fake.objects[key], "application/octet-stream")
                return self._reply(200, json.dumps(self._resource(*key)))

            def do_POST(self) -> None:
                url = urlparse(self.path)
                prefix = "/upload/storage/v1/b/"
                query = parse_qs(url.query)
                if not url.path.startswith(prefix) or query.get("uploadType") != ["multipart"]:
                    return self._reply(400, json.dumps({"error": {"code": 400, "message": "Unsupported"}}))
                bucket = url.path.removeprefix(prefix).removesuffix("/o")
                body = self.rfile.read(int(self.headers["Content-Length"]))
                head = f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode()
                metadata, data = BytesParser(policy=HTTP).parsebytes(head + body).iter_parts()
                name = json.loads(metadata.get_content())["name"]
                fake.objects[(bucket, name)] = data.get_payload(decode=True)
                return self._reply(200, json.dumps(self._resource(bucket, name)))

            def _list(self, bucket: str, query: dict[str, list[str]]) -> None:
                prefix = query.get("prefix", [""])[0]
                delimiter = query.get("delimiter", [""])[0]
                items, prefixes = [], set()
                for b, name in sorted(fake.objects):
                    if b != bucket or not name.startswith(prefix):
                        continue
                    rest = name[len(prefix) :]
                    if delimiter and delimiter in rest:
                        prefixes.add(prefix + rest.split(delimiter, 1)[0] + delimiter)
                    else:
                        items.append(self._resource(b, name))
                listing = {"kind": "storage#objects", "items": items, "prefixes": sorted(prefixes)}
                return self._reply(200, json.dumps(listing))

            def _resource(self, bucket: str, name: str) -> dict[str, str]:
                host = f"http://{self.headers['Host']}"
                return {
                    "kind": "storage#object",
                    "bucket": bucket,
                    "name": name,
                    "size": str(len(fake.objects[(bucket, name)])),
                    "generation": "1",
                    "mediaLink": f"{host}/download/storage/v1/b/{bucket}/o/{quote(name, safe='')}?alt=media",
                }

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
