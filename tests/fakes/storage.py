"""A fake Cloud Storage JSON API (buckets.get, buckets.list, objects.get, objects.list, multipart
objects.insert) on localhost HTTP.

Enough for google-cloud-storage's `Bucket.get_blob` + `Blob.download_as_*`, `Client.list_blobs` (prefix and
delimiter) and `Blob.upload_from_string` through `STORAGE_EMULATOR_HOST` (the client's own switch, like
fake-gcs-server), as the JSON API documents them: GET /storage/v1/b/{bucket}/o/{object} returns the object
resource or 404; GET /download/storage/v1/b/{bucket}/o/{object}?alt=media returns the bytes; GET
/storage/v1/b/{bucket}/o?prefix=P&delimiter=/ lists `items` and the `prefixes` one level down; POST
/upload/storage/v1/b/{bucket}/o?uploadType=multipart stores a multipart/related body (metadata, then data).
Buckets made with `add_bucket` answer GET /storage/v1/b/{bucket} (the bucket resource: location in capitals,
storageClass, labels) and GET /storage/v1/b?project=P[&prefix=X] (`items`); objects.list with softDeleted=true
lists only the soft-deleted objects (`soft_deleted`), as the JSON API documents softDeleted, and with
versions=true also each object's noncurrent versions (`noncurrent`: "lists all versions of an object as
distinct results"; without it, the live versions only).
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
        # Soft-deleted objects (bucket, name) -> bytes: billed, listed only with softDeleted=true.
        self.soft_deleted: dict[tuple[str, str], bytes] = {}
        # Noncurrent versions of objects in a versioned bucket (bucket, name) -> their bytes, oldest first:
        # billed, listed only with versions=true.
        self.noncurrent: dict[tuple[str, str], list[bytes]] = {}
        # Bucket resources by name, for buckets.get and buckets.list (project -> `projectNumber` not kept).
        self.buckets: dict[str, dict[str, object]] = {}
        self.bucket_projects: dict[str, str] = {}
        # Requests answered 403 (a path prefix -> message): a caller without the permission.
        self.forbidden: dict[str, str] = {}
        self._server: ThreadingHTTPServer | None = None

    def add_bucket(
        self,
        name: str,
        project: str,
        location: str = "us-central1",
        labels: dict[str, str] | None = None,
        storage_class: str = "STANDARD",
        location_type: str = "region",
    ) -> None:
        # locationType: "region", "dual-region" or "multi-region" (JSON API Buckets resource).
        self.buckets[name] = {
            "kind": "storage#bucket",
            "id": name,
            "name": name,
            "location": location.upper(),
            "locationType": location_type,
            "storageClass": storage_class,
            "labels": dict(labels or {}),
        }
        self.bucket_projects[name] = project

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
                denied = next((m for p, m in fake.forbidden.items() if path.startswith(p)), None)
                if denied is not None:
                    return self._reply(403, json.dumps({"error": {"code": 403, "message": denied}}))
                if path.rstrip("/") == "/storage/v1/b":
                    return self._list_buckets(parse_qs(url.query))
                if path.startswith(prefix) and "/" not in path.removeprefix(prefix):
                    found = fake.buckets.get(unquote(path.removeprefix(prefix)))
                    if found is None:
                        return self._reply(404, json.dumps({"error": {"code": 404, "message": "Not Found"}}))
                    return self._reply(200, json.dumps(found))
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

            def _list_buckets(self, query: dict[str, list[str]]) -> None:
                project = query.get("project", [""])[0]
                prefix = query.get("prefix", [""])[0]
                if not project:
                    return self._reply(
                        400, json.dumps({"error": {"code": 400, "message": "Required: project"}})
                    )
                items = [
                    bucket
                    for name, bucket in sorted(fake.buckets.items())
                    if fake.bucket_projects[name] == project and name.startswith(prefix)
                ]
                return self._reply(200, json.dumps({"kind": "storage#buckets", "items": items}))

            def _list(self, bucket: str, query: dict[str, list[str]]) -> None:
                prefix = query.get("prefix", [""])[0]
                delimiter = query.get("delimiter", [""])[0]
                soft = query.get("softDeleted", [""])[0].lower() == "true"  # the client sends True
                store = fake.soft_deleted if soft else fake.objects
                items, prefixes = [], set()
                for b, name in sorted(store):
                    if b != bucket or not name.startswith(prefix):
                        continue
                    rest = name[len(prefix) :]
                    if delimiter and delimiter in rest:
                        prefixes.add(prefix + rest.split(delimiter, 1)[0] + delimiter)
                    else:
                        items.append(self._resource(b, name, store))
                if query.get("versions", [""])[0].lower() == "true" and not soft:
                    items += [
                        {**self._resource(b, name, {(b, name): data}), "generation": str(n)}
                        for (b, name), old in sorted(fake.noncurrent.items())
                        if b == bucket
                        and name.startswith(prefix)
                        and not (delimiter and delimiter in name[len(prefix) :])
                        for n, data in enumerate(old, start=2)
                    ]
                listing = {"kind": "storage#objects", "items": items, "prefixes": sorted(prefixes)}
                return self._reply(200, json.dumps(listing))

            def _resource(
                self, bucket: str, name: str, store: dict[tuple[str, str], bytes] | None = None
            ) -> dict[str, str]:
                host = f"http://{self.headers['Host']}"
                return {
                    "kind": "storage#object",
                    "bucket": bucket,
                    "name": name,
                    "size": str(len((fake.objects if store is None else store)[(bucket, name)])),
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
