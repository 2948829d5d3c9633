"""A small OpenAI-compatible HTTP server on 127.0.0.1 for end-to-end and fault tests of agents.

MAF's real ``OpenAIChatClient`` (the Responses API) and ``OpenAIChatCompletionClient`` talk to
it through the real openai SDK, so everything between an agent and the network runs as in
production: request building, HTTP, retries and timeouts, server-sent-event parsing, MAF's
converters and function-invocation loop. Only the model is scripted (``openai_script``), and
``openai_service`` answers each call.

The server runs its own event loop in a thread, so a test's loop, a blocked test or another
process can all call it. It serves ``POST /v1/responses`` and ``POST /v1/chat/completions``,
plain JSON and ``stream: true``; it checks the bearer key; for the Responses API it keeps every
stored response so that ``previous_response_id`` recalls the conversation (an unknown id is a
400, as on the real service). Every call is recorded (``requests``, ``count()``), and tests wait
on what the server saw with ``wait_until`` (a deadline, never a sleep).

Usage::

    async with OpenAIServer(["Hello there", ToolCall("lookup", {"q": "x"}), "Done"]) as server:
        agent = Agent(client=server.responses_client(), ...)
        ...
        assert server.count("responses") == 3
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any, Self

from aiohttp import web
from openai_script import (
    BrokenStream,
    HttpError,
    RecordedRequest,
    Reply,
    ScriptEntry,
    Stall,
    ToolCall,
)
from openai_service import ScriptedService

__all__ = [
    "BrokenStream",
    "HttpError",
    "OpenAIServer",
    "RecordedRequest",
    "Reply",
    "ScriptEntry",
    "Stall",
    "ToolCall",
]

ENDPOINTS = ("responses", "chat/completions")

_Waiter = tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]


class OpenAIServer:
    """A scripted OpenAI-compatible service; a context manager (sync or async) that starts and
    stops it, the async form closing the SDK clients made with it too.

    Args:
        script: entries answered one per call, in order; ``add()`` appends more later.
        model: the model name the clients are given and the answers report.
        api_key: the bearer key the server requires.
    """

    def __init__(
        self,
        script: Sequence[ScriptEntry] = (),
        *,
        model: str = "gpt-local",
        api_key: str = "sk-local-test",
    ) -> None:
        self.model = model
        self.api_key = api_key
        self._service = ScriptedService(
            script, api_key=api_key, model=model, on_change=self._changed
        )
        self._waiters: set[_Waiter] = set()
        self._waiters_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._sock: socket.socket | None = None
        self._clients: list[Any] = []

    # ------------------------------------------------------------------------------ lifecycle

    @property
    def base_url(self) -> str:
        if self._sock is None:
            raise RuntimeError("the server is not started")
        host, port = self._sock.getsockname()[:2]
        return f"http://{host}:{port}/v1"

    def env(self) -> dict[str, str]:
        """The environment that points MAF's OpenAI clients at this server (for subprocesses)."""
        return {
            "OPENAI_BASE_URL": self.base_url,
            "OPENAI_API_KEY": self.api_key,
            "OPENAI_MODEL": self.model,
        }

    def start(self) -> Self:
        """Bind a free port on 127.0.0.1 and serve from a thread of its own.

        Raises:
            RuntimeError: the server did not come up within 10 seconds.
        """
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        ready = threading.Event()
        failure: list[Exception] = []
        self._thread = threading.Thread(
            target=self._serve_forever, args=(ready, failure), name="openai-server", daemon=True
        )
        self._thread.start()
        if not ready.wait(10) or failure:
            raise RuntimeError(f"the local OpenAI server did not start: {failure}")
        return self

    def stop(self) -> None:
        """Release every stalled call, close the server and join its thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._service.closing = True
        loop.call_soon_threadsafe(self._service.release_all)
        if self._runner is not None:
            done = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), loop)
            with contextlib.suppress(Exception):
                done.result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        self._loop = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose_clients()
        self.stop()

    def _serve_forever(self, ready: threading.Event, failure: list[Exception]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._open())
        except Exception as error:  # noqa: BLE001 - handed to start(), which raises it
            failure.append(error)
            ready.set()
            loop.close()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _open(self) -> None:
        app = web.Application()
        for endpoint in ENDPOINTS:
            app.router.add_post(f"/v1/{endpoint}", self._service.handle)
        # Stalled calls are released before cleanup; the short timeout only bounds a bug.
        self._runner = web.AppRunner(app, shutdown_timeout=2.0, access_log=None)
        await self._runner.setup()
        assert self._sock is not None
        await web.SockSite(self._runner, self._sock).start()

    # -------------------------------------------------------------------------- script, records

    def add(self, *entries: ScriptEntry) -> None:
        """Append entries to the script (answers for calls not made yet)."""
        with self._service.lock:
            self._service.script.extend(entries)

    @property
    def remaining(self) -> int:
        """Script entries no call has taken yet."""
        with self._service.lock:
            return len(self._service.script)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._service.lock:
            return list(self._service.requests)

    def count(self, endpoint: str | None = None) -> int:
        """How many calls arrived (at ``endpoint`` only, when given)."""
        return sum(endpoint in (None, r.endpoint) for r in self.requests)

    @property
    def holding(self) -> int:
        """How many calls are stalled or held right now."""
        with self._service.lock:
            return len(self._service.holds)

    def release(self) -> None:
        """Let every call stalled or held right now go on (later ones wait again)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._service.release_all)

    async def wait_until(
        self, condition: Callable[[], bool], *, timeout: float = 5.0, what: str = ""
    ) -> None:
        """Wait, in the caller's event loop, until ``condition()`` holds; it is tested again
        after every change the server records.

        Raises:
            TimeoutError: it did not hold within ``timeout`` seconds (the message lists the calls
                the server saw).
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not condition():
            remaining = deadline - loop.time()
            if remaining <= 0:
                seen = [(r.number, r.endpoint, r.outcome) for r in self.requests]
                raise TimeoutError(f"server condition {what!r} not met in {timeout}s: {seen}")
            waiter: _Waiter = (loop, loop.create_future())
            with self._waiters_lock:
                self._waiters.add(waiter)
            try:
                if not condition():  # a change between the test and the registration
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(waiter[1], remaining)
            finally:
                with self._waiters_lock:
                    self._waiters.discard(waiter)

    def _changed(self) -> None:
        with self._waiters_lock:
            waiters = list(self._waiters)
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
                loop.call_soon_threadsafe(_wake, future)

    # --------------------------------------------------------------------------------- clients

    def responses_client(
        self, *, timeout: float | None = None, max_retries: int | None = None, **kwargs: Any
    ) -> Any:
        """MAF's ``OpenAIChatClient`` (the Responses API) pointed at this server.

        MAF builds the SDK client itself, unless ``timeout`` or ``max_retries`` is given: its
        public client takes neither, so they go on an ``AsyncOpenAI`` passed as
        ``async_client`` (MAF's documented way to configure the SDK). ``kwargs`` go to MAF.
        """
        from agent_framework.openai import OpenAIChatClient

        client = OpenAIChatClient(**self._client_arguments(timeout, max_retries), **kwargs)
        self._clients.append(client)
        return client

    def completions_client(
        self, *, timeout: float | None = None, max_retries: int | None = None, **kwargs: Any
    ) -> Any:
        """MAF's ``OpenAIChatCompletionClient`` pointed at this server (as above)."""
        from agent_framework.openai import OpenAIChatCompletionClient

        arguments = self._client_arguments(timeout, max_retries)
        client = OpenAIChatCompletionClient(**arguments, **kwargs)
        self._clients.append(client)
        return client

    def _client_arguments(self, timeout: float | None, max_retries: int | None) -> dict[str, Any]:
        if timeout is None and max_retries is None:
            return {"model": self.model, "base_url": self.base_url, "api_key": self.api_key}
        from openai import AsyncOpenAI

        sdk: dict[str, Any] = {"base_url": self.base_url, "api_key": self.api_key}
        if timeout is not None:
            sdk["timeout"] = timeout
        if max_retries is not None:
            sdk["max_retries"] = max_retries
        return {"model": self.model, "async_client": AsyncOpenAI(**sdk)}

    async def aclose_clients(self) -> None:
        """Close the SDK clients made here: their pooled connections belong to the caller's
        loop, and an unclosed one is a ResourceWarning (an error in this suite)."""
        clients, self._clients = self._clients, []
        for client in clients:
            await client.client.close()


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
