"""The HTTP side: Starlette routes for Vertex's health and prediction paths over a model that loads in the
background, so the port answers (503) while TensorFlow loads the model, then 200."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from serving import payload
from serving.model_files import ModelError
from serving.settings import Settings

if TYPE_CHECKING:  # serving.model imports TensorFlow, which the loading thread imports, not the app
    from serving.model import ServedModel

log = logging.getLogger("serving")


class Loading:
    """The model as the routes see it: not yet loaded, loaded, or failed (with the reason)."""

    def __init__(self) -> None:
        self.model: ServedModel | None = None
        self.failure: str | None = None
        self.done = threading.Event()

    def run(self, load: Callable[[], ServedModel], on_failure: Callable[[], None]) -> None:
        started = time.monotonic()
        try:
            self.model = load()
        except ModelError as exc:
            self.failure = str(exc)
        except Exception as exc:  # any load failure must end the server, with its reason
            self.failure = f"the model could not be loaded: {type(exc).__name__}: {exc}"
        self.done.set()
        if self.failure:
            log.error("%s", self.failure)
            on_failure()
        else:
            assert self.model is not None
            classes = ", ".join(self.model.class_names)
            log.info("model loaded in %.1f s (classes: %s); serving", time.monotonic() - started, classes)


def create_app(
    settings: Settings, load: Callable[[], ServedModel], on_failure: Callable[[], None] = lambda: None
) -> Starlette:
    """The server's app; the model loads on a daemon thread once the app starts (a SIGTERM during the load
    does not wait for it), and `on_failure` runs when it cannot be loaded."""
    state = Loading()

    async def health(request: Request) -> JSONResponse:
        if state.model is None:
            status = "failed" if state.failure else "loading"
            return JSONResponse({"status": status, "error": state.failure}, status_code=503)
        return JSONResponse({"status": "ready"})

    async def predict(request: Request) -> JSONResponse:
        model = state.model
        if model is None:
            reason = state.failure or "the model is still loading; retry when the health route answers 200"
            return JSONResponse({"error": reason}, status_code=503)
        try:
            images = payload.parse(await request.body())
        except payload.PayloadError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        answers = await anyio.to_thread.run_sync(model.answer, images)
        return JSONResponse(payload.response(answers))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        threading.Thread(target=state.run, args=(load, on_failure), name="load-model", daemon=True).start()
        yield

    routes = [
        Route(settings.health_route, health, methods=["GET"]),
        Route(settings.predict_route, predict, methods=["POST"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)
