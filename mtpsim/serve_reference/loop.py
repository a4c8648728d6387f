"""The engine thread: continuous batching over `SpecDecodeEngine`, fed from HTTP handlers."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import Any

from mtpsim.dataclass import dataclass
from mtpsim.metrics import SpecDecodeCounters
from mtpsim.serve_reference.indexer_counts import IndexerCounter

Sink = Callable[[Any], None]  # called in the engine thread with each RequestOutput
ABORT_ALL = object()  # inbox item: end every live request (the server is shutting down)


@dataclass(slots=True)
class Aborted:
    """The last output of a request the server ended (it shapes like the engine's own)."""

    request_id: str
    new_token_ids: list[int]
    finished: bool = True
    finish_reason: str = "abort"
    counters: None = None


@dataclass(slots=True)
class _Add:
    request_id: str
    prompt_tokens: list[int]
    max_tokens: int
    temperature: float
    ignore_eos: bool
    seed: int | None
    sink: Sink
    ack: Callable[[str | None], None]  # None on success, else the engine's error message


class EngineLoop:
    """Owns the engine; every engine call happens in its thread."""

    def __init__(self, engine: Any, on_error: Callable[[BaseException], None] | None = None,
                 ) -> None:
        self.engine = engine
        self.on_error = on_error  # called once, in the engine thread, if the engine fails
        self._inbox: list[Any] = []  # _Add, a request id to abort, or ABORT_ALL
        self._sinks: dict[str, Sink] = {}
        self._cond = threading.Condition()
        self._stop = False
        self._closed = False  # set when the engine thread ends: submit() answers at once
        self._closing = False  # set by abort_all(): the server is shutting down
        self._counters = SpecDecodeCounters()
        self._counters_lock = threading.Lock()
        self.error: BaseException | None = None
        self.indexer = IndexerCounter(engine)  # updated in the engine thread
        self._thread = threading.Thread(target=self._run, name="mtpsim-engine", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify()
        self._thread.join(timeout_s)

    def submit(self, add: _Add) -> None:
        """Queue a request; `add.ack` tells whether the engine took it. A stopped engine
        answers at once, so no request ever waits on a dead thread."""
        with self._cond:
            if self._closed or self._closing:
                add.ack("the server is shutting down" if self._closing and not self._closed
                        else f"the engine has stopped ({self.error!r})")
                return
            self._inbox.append(add)
            self._cond.notify()

    def abort(self, request_id: str) -> None:
        with self._cond:
            self._inbox.append(request_id)
            self._cond.notify()

    def abort_all(self) -> None:
        """End every live request now (each stream finishes with reason "abort") and refuse
        new ones: a shutting-down server then has no request to wait for."""
        with self._cond:
            self._closing = True
            self._inbox.append(ABORT_ALL)
            self._cond.notify()

    def counters(self) -> SpecDecodeCounters:
        """A consistent copy of the engine's spec-decode counters (taken between steps)."""
        with self._counters_lock:
            c = self._counters
            return SpecDecodeCounters(c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens,
                                      list(c.accepted_per_pos))

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and self.error is None

    @property
    def accepting(self) -> bool:
        """Alive and not shutting down: a refused request is then the request's fault."""
        return self.alive and not self._closing

    def _drain(self) -> None:
        with self._cond:
            while not self._inbox and not self._stop and not self.engine.has_unfinished():
                self._cond.wait()
            inbox, self._inbox = self._inbox, []
        for item in inbox:
            if item is ABORT_ALL:
                for request_id, sink in list(self._sinks.items()):
                    self.engine.abort_request(request_id)
                    sink(Aborted(request_id, []))
                self._sinks.clear()
                continue
            if isinstance(item, str):
                if self._sinks.pop(item, None) is not None:
                    self.engine.abort_request(item)
                continue
            try:
                self.engine.add_request(item.request_id, item.prompt_tokens, item.max_tokens,
                                        temperature=item.temperature, ignore_eos=item.ignore_eos,
                                        seed=item.seed)
            except ValueError as e:
                item.ack(str(e))
                continue
            self._sinks[item.request_id] = item.sink
            item.ack(None)

    def _snapshot(self) -> None:
        s = self.engine.stats
        with self._counters_lock:
            self._counters = SpecDecodeCounters(int(s.num_drafts), int(s.num_draft_tokens),
                                                int(s.num_accepted_tokens),
                                                [int(x) for x in s.accepted_per_pos])

    def _run(self) -> None:
        try:
            while True:
                self._drain()
                if self._stop:
                    return
                if not self.engine.has_unfinished():
                    continue
                outs = self.engine.step()
                self._snapshot()
                for out in outs:
                    sink = self._sinks.get(out.request_id)
                    if out.finished:
                        self._sinks.pop(out.request_id, None)
                    if sink is not None:
                        sink(out)
        except BaseException as e:  # surfaced by /health, on_error and every open stream
            self.error = e
            traceback.print_exc()  # into the server log, whose tail the runner shows
            if self.on_error is not None:  # first: a client that sees the error finds it reported
                self.on_error(e)
            for sink in self._sinks.values():
                sink(e)
        finally:
            with self._cond:
                self._closed = True
                pending, self._inbox = self._inbox, []
            for item in pending:
                if isinstance(item, _Add):
                    item.ack(f"the engine has stopped ({self.error!r})")
