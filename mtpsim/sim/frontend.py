"""The API server in front of the engine: when the engine sees each request, and when the client
sees each step's tokens.

vLLM 0.33.0's OpenAI server admits requests and streams outputs on one asyncio event loop per
API-server process (`vllm/v1/engine/async_llm.py`):

- `AsyncLLM.add_request` (line 397) turns the rendered input into an engine request with
  `self.input_processor.process_inputs(...)` on the loop (line 483) and sends it to the engine
  core (`_add_request`); the HTTP parsing and request validation before it run on the same loop.
- `AsyncLLM._run_output_handler` (line 856) runs one task that pulls each engine step's outputs
  (`engine_core.get_output_async()`) and processes them (`output_processor.process_outputs`:
  detokenisation, the per-request output queues the streaming responses read) in slices of at
  most `VLLM_V1_OUTPUT_PROC_CHUNK_SIZE` outputs (line 874; 128 by default, `vllm/envs.py` line
  172), with `await asyncio.sleep(0)` between slices (lines 891-916) "so that we don't block the
  event loop for too long": the other ready tasks, the admissions among them, run between two
  slices.

So admissions and output slices take turns on one loop: while the running requests stream
every step, a waiting request is admitted only between their slices, and a burst reaches the
engine more slowly than the admission work alone would take. `ApiServerLoop` simulates that
loop as a single server: admissions (their on-loop cost each, in send order) and output slices
(their chunks' cost, in step order), non-preemptive, alternating when both wait.

What the loop really runs between two output slices (read from the installed sources, vLLM
0.33.0, uvloop 0.23.0, uvicorn 0.55.0, CPython 3.11): every API server runs on uvloop
(`entrypoints/cli/serve.py` line 156 and `v1/utils.py` line 527: `uvloop.run(...)`), whose
iteration runs the callbacks that were ready when it began (`uvloop/loop.pyx` `_on_idle`,
lines 442-482: `ntodo = len(self._ready)`; CPython's `BaseEventLoop._run_once` alike,
`asyncio/base_events.py` line 1905), then polls I/O. `asyncio.sleep(0)` is a bare yield
(`asyncio/tasks.py` lines 626-641) that re-queues the task at the back of the ready queue
(line 330), so between two slices of one step every callback ahead of it runs once, and the
requests read in the poll after a slice (uvicorn creates each request's task in the I/O
callback, `protocols/http/httptools_impl.py` line 305) run right after the next slice. The
handler yields only between slices of one step (`if end < num_outputs`, `async_llm.py` line
915); after a step's last slice `await outputs_queue.get()` (`core_client.py` line 1276) does
not suspend while steps are queued (`asyncio/queues.py` lines 154-158). An admission is not one
callback: the prompt is tokenised on the renderer's one worker thread
(`renderers/base.py` lines 149-158, `renderer_num_workers` = 1, `config/model.py` line 412),
with on-loop work before and after. That rule, with admissions as one callback each and the
client's sends as arrivals (every admission sent by a turn's start runs before the next
slice), was built and scored on the public corpus's training rows (docs/public-corpus.md,
v7): a burst sent at once becomes one turn, its tokens wait for all of it, and TPOT and TTFT
coverage fell, so the one-admission-per-slice alternation stays as the approximation; the
arrivals that decide how many admissions a turn holds (the HTTP layer, the tokeniser thread,
the GIL they share) are not modelled.
`DirectFrontend` is the uncoupled case: requests reach the engine when sent (the client's slot
rule) and each step's chunks are streamed after it (`streamed_times`).

Both have the narrow interface the simulator's loop uses: `send_until(now)`,
`next_send_s(ends, chunks)` (the next send, given the outputs of the steps about to run),
`on_steps(ends, chunks)` (the outputs of the steps that ran), `on_finish`, `limit`, `in_seconds`
and `seen(times, chunks)` (when the client sees each position's tokens).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from mtpsim.arrivals import Client

if TYPE_CHECKING:
    from mtpsim.spec import Experiment

# vLLM 0.33.0 `vllm/envs.py` line 172: VLLM_V1_OUTPUT_PROC_CHUNK_SIZE, the outputs the output
# handler processes before it yields the event loop (`v1/engine/async_llm.py` line 874)
OUTPUT_SLICE = 128


def api_servers(exp: Experiment) -> int:
    """API-server processes: engine.api_server_count, else vLLM 0.33.0's default, one per DP
    rank (`entrypoints/cli/serve.py`: "Defaulting api_server_count to data_parallel_size";
    vLLM PR #32525, January 2026; before it, one)."""
    return exp.engine.api_server_count or exp.engine.dp


def frontend_queue(sends: np.ndarray, cost_s: float, servers: int = 1) -> np.ndarray:
    """When the engine sees each request with nothing else on the API servers' loops: `servers`
    API servers, request i going to server i mod servers, each takes its requests in send order,
    `cost_s` each (a FIFO single server: a_i = max(send_i, a_(i-servers)) + cost)."""
    out = np.empty_like(np.asarray(sends, float))
    free = [0.0] * servers
    for i, s in enumerate(sends):
        j = i % servers
        free[j] = max(float(s), free[j]) + cost_s
        out[i] = free[j]
    return out


def streamed_times(times: np.ndarray, chunks: np.ndarray, cost_s: float) -> np.ndarray:
    """When the client sees each step's tokens ([steps + 1], as `times`): the API server
    processes the steps' output chunks in order, `cost_s` each, after the step ends
    (v_j = max(t_j, v_(j-1)) + chunks_j x cost); it keeps up while a step outlasts its chunks'
    work, else tokens reach the client late and the lag grows."""
    work = np.concatenate([[0.0], np.cumsum(np.asarray(chunks, float) * cost_s)])  # C_j
    # v_j = max over i <= j of t_i + (C_j - C_(i-1)): the unrolled recursion, vectorised
    start = np.maximum.accumulate(times - np.concatenate([[0.0], work[:-1]]))
    return np.concatenate([[times[0]], (work + start)[1:]])


def frontend_for(exp: Experiment, sends: np.ndarray, conc: int | None, dp: int,
                 modelled: bool) -> DirectFrontend | ApiServerLoop:
    """The frontend of the simulated engine rank (every dp-th request from the first).
    `sends`: every request's client send time; `modelled`: the API server's costs apply (no
    fitted calibration; without max_concurrency, since with one the sends wait for finishes and
    the loop's queue stays short). Request i goes to API server i mod servers
    (api_servers(exp)); the loop simulated is server 0's, which admits every servers-th request
    and streams dp / servers ranks' outputs (the simulated rank's chunks, dp / servers times:
    the ranks are alike)."""
    c = exp.calibration
    servers = api_servers(exp)
    chunk_s = c.frontend_us_per_chunk * 1e-6 * dp / servers if modelled else 0.0
    if modelled and c.frontend_ms_per_request > 0:
        return ApiServerLoop(sends, dp, servers, c.frontend_ms_per_request * 1e-3, chunk_s)
    return DirectFrontend(Client(np.asarray(sends)[::dp], conc), chunk_s)


class DirectFrontend:
    """Requests reach the engine when the client sends them (`Client`'s slot rule); each step's
    chunks are streamed after it at `chunk_s` each (`streamed_times`)."""

    in_seconds = False  # the client's rule may run in positions (rate inf); streaming is after

    def __init__(self, client: Client, chunk_s: float) -> None:
        self.client, self.chunk_s = client, chunk_s
        self.limit = client.limit
        self.others: list[tuple[float, list[int]]] = []  # none: no loop admits other ranks'

    def send_until(self, now: float) -> list[tuple[int, float]]:
        return self.client.send_until(now)

    def next_send_s(self, ends: np.ndarray | None = None, chunks: np.ndarray | None = None) -> float:
        """The next send; it does not depend on the steps about to run."""
        return self.client.next_send_s()

    def on_steps(self, ends: np.ndarray, chunks: np.ndarray) -> None:
        """Nothing to do: the streaming is priced from the whole run (`seen`)."""

    def on_finish(self, now: float, count: int = 1) -> None:
        self.client.on_finish(now, count)

    def seen(self, times: np.ndarray, chunks: np.ndarray) -> np.ndarray:
        return streamed_times(times, chunks, self.chunk_s) if self.chunk_s > 0 else times


class ApiServerLoop:
    """API server 0's event loop: admissions of its requests (every `servers`-th, `admit_s`
    each, in send order) and the output slices of the simulated rank's engine steps (at most
    OUTPUT_SLICE chunks, `chunk_s` each, in step order; a step's tokens reach the client when
    its last slice ends), one at a time, taking turns when both wait (`asyncio.sleep(0)` between
    slices). When request g's admission ends, the requests g + 1 .. g + servers - 1 reach their
    engines too (the other servers' loops are alike); those of the simulated rank (every dp-th)
    are released to it, the others reported to `others` (the lock-step of DP ranks). Served as
    far as is determined: an item that starts before the end of the last step run cannot be
    overtaken by a later step's outputs. Once every request is admitted, the rest of the
    streaming is `streamed_times` from where the loop stands."""

    in_seconds = True

    def __init__(self, sends: np.ndarray, dp: int, servers: int, admit_s: float, chunk_s: float,
                 slice_size: int = OUTPUT_SLICE) -> None:
        self.all_sends = np.asarray(sends, float)
        self.sends = self.all_sends[::servers].tolist()  # server 0's requests
        self.dp, self.servers = dp, servers
        self.admit_s, self.chunk_s, self.slice = admit_s, chunk_s, slice_size
        self.limit = -(-len(self.all_sends) // dp)
        self.admitted: list[float] = []  # when each admission's work ended, in send order
        self.released = 0  # admissions handed to the engines
        self.others: list[tuple[float, list[int]]] = []  # (when, other ranks' request ids)
        # the loop: free from `free`; last item an output slice?; output steps (ends, chunks)
        # booked, the head's index and its chunks left; when each step's last slice ended
        self.free, self.last_out = 0.0, False
        self.ends: list[float] = []
        self.chunks: list[float] = []
        self.head, self.left = 0, -1.0
        self.visible: list[float] = []

    # ---- the interface the simulator uses ----------------------------------------------------
    def send_until(self, now: float) -> list[tuple[int, float]]:
        """(the rank's request id, client send time) of each of its requests admitted by `now`;
        the other ranks' ones admitted by then join `others`, stamped `now`."""
        self._serve(now)
        out, n = [], len(self.all_sends)
        while self.released < len(self.admitted) and self.admitted[self.released] <= now:
            g = self.released * self.servers
            group = range(g, min(g + self.servers, n))
            out += [(i // self.dp, float(self.all_sends[i])) for i in group if i % self.dp == 0]
            if other := [i for i in group if i % self.dp]:
                self.others.append((now, other))
            self.released += 1
        return out

    def next_send_s(self, ends: np.ndarray | None = None, chunks: np.ndarray | None = None) -> float:
        """When the next admission ends, if the steps about to run end at `ends` with `chunks`
        output chunks each (and nothing runs after them); inf when all are released."""
        if self.released < len(self.admitted):
            return self.admitted[self.released]
        if len(self.admitted) == len(self.sends):
            return math.inf
        state = (self.free, self.last_out, self.head, self.left, len(self.ends),
                 len(self.visible))
        if ends is not None and self.chunk_s > 0:
            self.ends.extend(np.asarray(ends, float).tolist())
            self.chunks.extend(np.asarray(chunks, float).tolist())
        t = self._serve(math.inf, stop_at_admission=True)
        # a look ahead: undo it
        self.free, self.last_out, self.head, self.left, booked, seen = state
        del self.ends[booked:], self.chunks[booked:], self.visible[seen:], self.admitted[-1]
        return t

    def on_steps(self, ends: np.ndarray, chunks: np.ndarray) -> None:
        """The steps that ran: their outputs join the loop's queue, and the loop is served up to
        the last one's end."""
        if len(ends) == 0:
            return
        if self.chunk_s > 0:
            self.ends.extend(np.asarray(ends, float).tolist())
            self.chunks.extend(np.asarray(chunks, float).tolist())
        self._serve(float(ends[-1]))

    def on_finish(self, now: float, count: int = 1) -> None:
        """No concurrency limit: a finish frees nothing the loop waits for."""

    def seen(self, times: np.ndarray, chunks: np.ndarray) -> np.ndarray:
        """[positions + 1] seconds at which the client sees each step's tokens: the steps the
        loop served alongside admissions, then the rest streamed in order from where it stands
        (`times`, `chunks`: the clock's, over every step run)."""
        if self.chunk_s <= 0:
            return times
        while self.left > 0:  # finish the step in progress slice by slice
            self._slice()
        done = len(self.visible)
        rest = streamed_times(np.concatenate([[self.free], times[done + 1:]]), chunks[done:],
                              self.chunk_s)
        return np.concatenate([[times[0]], self.visible, rest[1:]])

    # ---- the loop ----------------------------------------------------------------------------
    def _serve(self, horizon: float, stop_at_admission: bool = False) -> float:
        """Serve items, one at a time, while the next starts before `horizon` and requests wait
        for admission; with `stop_at_admission`, up to the next admission's end (returned)."""
        n, sends = len(self.sends), self.sends
        while len(self.admitted) < n:
            while self.left <= 0 and self.head < len(self.ends) and self.chunks[self.head] <= 0:
                self._empty_step()
            if self.left <= 0 and self.head < len(self.ends):
                self.left = self.chunks[self.head]
            out_at = max(self.free, self.ends[self.head]) if self.left > 0 else math.inf
            adm_at = max(self.free, sends[len(self.admitted)])
            take_out = out_at < adm_at or (out_at == adm_at and not self.last_out)
            if min(out_at, adm_at) >= horizon:
                break
            if take_out:
                self._slice()
            else:
                self.free = adm_at + self.admit_s
                self.last_out = False
                self.admitted.append(self.free)
                if stop_at_admission:
                    return self.free
        return math.inf

    def _slice(self) -> None:
        """Process the head step's next slice of outputs."""
        size = min(self.left, self.slice)
        self.free = max(self.free, self.ends[self.head]) + size * self.chunk_s
        self.last_out = True
        self.left -= size
        if self.left <= 0:
            self.visible.append(self.free)
            self.head += 1

    def _empty_step(self) -> None:
        """A step with no output chunks: nothing to process, seen when it ends (or when the
        step before it is, if later)."""
        prev = self.visible[-1] if self.visible else 0.0
        self.visible.append(max(prev, self.ends[self.head]))
        self.head += 1
