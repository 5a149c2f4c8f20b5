"""`python -m serving [--host H]`: the prediction server on AIP_HTTP_PORT, serving AIP_STORAGE_URI's model.

Listens at once (Vertex restarts a container whose port does not accept connections), answers the health
route with 503 while the model loads and 200 once it has; SIGTERM or Ctrl-C stops it after the requests in
flight. Exits 1 when the model cannot be loaded, naming what is missing.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from typing import TYPE_CHECKING

# Before TensorFlow is imported (by serving.model): its C++ start-up lines are noise in a server's log.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import uvicorn

from serving import settings as env
from serving.app import create_app

if TYPE_CHECKING:
    from serving.model import ServedModel


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serving", description=__doc__.split("\n\n")[0])
    # Vertex needs 0.0.0.0 (custom-container-requirements); a server tried on a laptop wants loopback.
    parser.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    try:
        settings = env.from_env()
    except env.SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    failed: list[bool] = []
    server: uvicorn.Server

    def stop_on_failure() -> None:
        failed.append(True)
        server.should_exit = True

    def load() -> ServedModel:
        # TensorFlow's import takes seconds: on the loading thread, after the port listens.
        from serving import model

        return model.load(settings.model_uri)

    app = create_app(settings, load, stop_on_failure)
    config = uvicorn.Config(app, host=args.host, port=settings.port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    logging.getLogger("serving").info(
        "listening on %s:%d (health %s, predict %s); loading %s",
        args.host,
        settings.port,
        settings.health_route,
        settings.predict_route,
        settings.model_uri,
    )
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then raises the signal again once it has restored the
    # handlers it found (uvicorn/server.py, capture_signals): these make that a plain exit 0, not a death
    # by signal nor a KeyboardInterrupt traceback.
    for stop in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop, lambda *_: None)
    server.run()
    if failed:
        return 1
    logging.getLogger("serving").info("stopped after the requests in flight")
    return 0


if __name__ == "__main__":
    sys.exit(main())
