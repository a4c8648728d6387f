"""Wraps vLLM 0.33.0's `MTPSpeculator` in place: policy, indexer counts, trace (torch side).

One `Recorder` per process follows the draft loop through the four lifecycle hooks (phase
`prefill` = draft step 0, phase `decode` = steps 1..k-1, numbered by the MTP attention's
forwards since `on_multi_step_decode_begin`) and counts, through forward hooks on the MTP
layer's sparse attention and on its indexer's modules, whether the indexer ran at each step.
Those hooks run Python, which a CUDA-graph replay does not: the counts that hold under graphs are
taken on the device (device_counts.py), the hook counts stay as the eager cross-check.

Trace mode (eager only: hooks do not run when a CUDA graph is replayed) runs each shared
step's attention once more in shadow with the indexer on, keeps the fresh rows, records their
overlap with the shared rows and puts the shared rows back before the real forward, so the
drafts are those of `share`. The shadow forward rewrites the step's KV-cache slots with the
same values, and the indexer K cache of the draft positions early (the next draft prefill
rewrites those). Trace mode perturbs timing.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import torch

from mtpsim.fileio import atomic_write_json
from mtpsim.vllm_plugin import exit_flush
from mtpsim.vllm_plugin.compiled import compile_mode, hooks_traced
from mtpsim.vllm_plugin.contract import (
    HOOKS,
    SHARE_FLAG,
    check_speculator_shape,
    load_speculator_classes,
)
from mtpsim.vllm_plugin.counts import PluginCounts, StepCounts
from mtpsim.vllm_plugin.device_counts import DeviceCounts, uncounted_forward
from mtpsim.vllm_plugin.settings import PluginConfigError, PluginSettings
from mtpsim.vllm_plugin.topk import row_overlap, rows_equal

logger = logging.getLogger("vllm.mtpsim")

STATE_ATTR = "__mtpsim_state__"
_WRAPPED = (*HOOKS, "load_draft_model", "capture", "propose")
FLUSH_EVERY_S = 2.0
# Request ids vLLM 0.33.0 gives its own warm-up and dummy batches (v1/worker/gpu/warmup.py,
# model_runner._dummy_run).
STARTUP_REQ_PREFIXES = ("_v2_mixed_warmup", "_dummy_req_")
# What `_wrap` takes: the original method in, its wrapper out.
Wrapping = Callable[[Callable[..., Any]], Callable[..., Any]]


class Recorder:
    """Per-process counts and trace rows; writes them under `settings.trace_dir`."""

    def __init__(self, settings: PluginSettings) -> None:
        self.settings = settings
        self.counts = PluginCounts(policy=settings.policy, pid=os.getpid())
        self.phase = "idle"  # idle | prefill | decode
        self.decode_forwards = 0
        self.in_capture = False
        self.in_dummy = False  # inside a propose(dummy_run=True): profiling, warm-up, DP sync
        self.in_shadow = False
        self.req_ids: list[str] = []
        self.call = 0  # propose() calls seen (trace rows carry it to pair drafts with verdicts)
        self._t0 = time.monotonic()
        self.write_trace = settings.trace
        self._trace_rows: list[dict[str, Any]] = []
        self._last_flush = 0.0
        self._closed_pid = 0  # the process whose exit flush already ran
        self.device_counts: DeviceCounts | None = None  # set when the draft model loads

    def forked(self) -> None:
        """In a forked child: start empty, so the parent's counts and unflushed rows are not
        written twice (the child writes its own files, named by its pid)."""
        old = self.counts
        self.counts = PluginCounts(policy=old.policy, share_flag=old.share_flag,
                                   hooked_layers=old.hooked_layers, compile_mode=old.compile_mode,
                                   hooks_traced=old.hooks_traced, pid=os.getpid())
        self._trace_rows = []
        self._last_flush = 0.0
        self._closed_pid = 0
        self.call = 0
        self.device_counts = None  # the parent's model and its counters

    # -- draft-loop phases (driven by the speculator hooks) --
    def begin(self, phase: str) -> None:
        self.phase = phase
        self.decode_forwards = 0

    def end(self) -> None:
        self.phase = "idle"
        self.maybe_flush()

    @property
    def context(self) -> str:
        return "capture" if self.in_capture else "dummy" if self.in_dummy else "propose"

    def next_step(self) -> int | None:
        if self.phase == "prefill":
            return 0
        if self.phase == "decode":
            if self.in_capture:
                return 1  # capture records every batch size in one bracket: all steps >= 1
            self.decode_forwards += 1
            return self.decode_forwards
        return None  # a forward outside propose/capture (profiling): not a draft step

    def steps(self) -> Any:
        return self.counts.contexts[self.context]

    # -- output --
    def add_trace(self, row: dict[str, Any]) -> None:
        if self.write_trace and not self.in_capture and not self.in_dummy:
            self._trace_rows.append(row)

    def maybe_flush(self) -> None:
        if time.monotonic() - self._last_flush >= FLUSH_EVERY_S:
            self.flush()

    def close(self) -> None:
        """The exit flush: everything still buffered, and the counts marked final (a counts
        file left not final means the process was killed and up to FLUSH_EVERY_S is lost)."""
        if self._closed_pid == os.getpid():
            return
        self._closed_pid = os.getpid()
        self.counts.final = True
        self.flush()

    def flush(self) -> None:
        self._last_flush = time.monotonic()
        folder = self.settings.trace_dir
        if folder is None:
            return
        # The pid now, not at install: vLLM may fork workers from a process that installed.
        self.counts.pid = os.getpid()
        self.read_device_counts()
        atomic_write_json(folder / f"vllm-counts-{self.counts.pid}.json", self.counts.to_json())
        if self._trace_rows:
            with open(folder / f"vllm-trace-{self.counts.pid}.jsonl", "a", encoding="utf-8") as f:
                f.writelines(json.dumps(r) + "\n" for r in self._trace_rows)
            self._trace_rows.clear()

    def set_device_context(self, served: bool) -> None:
        if self.device_counts is not None:
            self.device_counts.set_context(served)

    def read_device_counts(self) -> None:
        """Copy the device counts into `counts` (a device sync; at flush and exit only)."""
        if self.device_counts is None:
            return
        try:
            table = self.device_counts.read()
        except Exception as e:  # noqa: BLE001 - a torn-down CUDA context at exit
            logger.warning("mtpsim: device counts unreadable: %s", e)
            return
        self.counts.device = {ctx: StepCounts(v["forwards"], v["indexer"],
                                              [0] * len(v["forwards"]))
                              for ctx, v in table.items()}

    # -- module hooks on the MTP layer's sparse attention and its indexer --
    def attach(self, draft_model: torch.nn.Module, *, eager_hooks: bool = True,
               step: torch.Tensor | None = None, num_steps: int = 1) -> int:
        """Count on every sparse-attention module (it has `skip_topk` and an `indexer`);
        returns how many. vLLM 0.33.0 has two shapes: the generic MultiHeadLatentAttentionWrapper
        calls `self.indexer(...)` (whose forward calls `wq_b` once, model_executor/models/
        deepseek_v2.py `Indexer.forward`); the CUDA DeepseekV32Attention calls the indexer's
        sub-modules (`wq_b`, `wk_weights_proj`) and a fused op (models/deepseek_v32/
        attention.py `DeepseekV32Attention.forward`). Either way `wq_b` runs once exactly when
        the indexer does. `step` (the speculator's current-draft-step scalar): also count on
        the device (CUDA graphs, compilation); `eager_hooks`: also count through hooks."""
        n = 0
        for module in draft_model.modules():
            indexer = getattr(module, "indexer", None)
            if not hasattr(module, "skip_topk") or not isinstance(indexer, torch.nn.Module):
                continue
            n += 1
            if step is not None:
                if self.device_counts is None:
                    self.device_counts = DeviceCounts(num_steps, step)
                part = getattr(indexer, "wq_b", None)
                self.device_counts.attach(module, part if isinstance(part, torch.nn.Module)
                                          else indexer)
            if not eager_hooks:
                continue
            module.register_forward_pre_hook(self._attn_pre, with_kwargs=True)
            module.register_forward_hook(self._attn_post)
            for part in (indexer, *indexer.children()):
                part.register_forward_pre_hook(functools.partial(self._indexer_ran, module))
        return n

    def _indexer_ran(self, owner: Any, part: Any, args: tuple[Any, ...]) -> None:
        if not self.in_shadow:
            owner.__mtpsim_ran__ = True

    def _attn_pre(self, module: Any, args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> None:
        step = self.next_step()
        module.__mtpsim_step__ = step
        module.__mtpsim_ran__ = False
        if step is None:
            return
        self.steps().bump("forwards", step)
        if self.settings.trace and module.skip_topk and not self.in_capture:
            self._shadow(module, step, args, kwargs)

    def _attn_post(self, module: Any, args: tuple[Any, ...], output: Any) -> None:
        step = getattr(module, "__mtpsim_step__", None)
        if step is not None and module.__mtpsim_ran__:
            self.steps().bump("indexer", step)

    def _shadow(self, module: Any, step: int, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> None:
        """Run the module once more with its indexer on, keep the fresh rows, put the shared
        rows back: the real forward that follows drafts with the shared rows, as `share` does.
        The extra forward rewrites the same KV-cache slots with the same values."""
        buf = _topk_buffer(module)
        # [num_tokens]; both shapes take positions first (the CUDA one is called by keyword).
        positions = kwargs["positions"] if "positions" in kwargs else args[0]
        n = positions.shape[0]
        shared = buf[:n].clone()
        self.in_shadow = True
        if self.device_counts is not None:
            self.device_counts.skip_python = True
        module.skip_topk = False
        try:
            uncounted_forward(module)(*args, **kwargs)  # no hooks re-enter, nothing counted
            fresh = buf[:n].clone()
        finally:
            buf[:n].copy_(shared)
            module.skip_topk = True
            self.in_shadow = False
            if self.device_counts is not None:
                self.device_counts.skip_python = False
        self.steps().bump("shadow", step)
        for i, ov in enumerate(row_overlap(shared, fresh).tolist()):
            req = self.req_ids[i] if i < len(self.req_ids) else str(i)
            self.add_trace({"kind": "overlap", "call": self.call, "req": req, "step": step,
                            "overlap": ov})


def _topk_buffer(module: Any) -> torch.Tensor:
    buf = getattr(module, "topk_indices_buffer", None)
    return buf if isinstance(buf, torch.Tensor) else module.indexer.topk_indices_buffer


def _wrap(cls: type, name: str, make: Wrapping) -> None:
    original = getattr(cls, name)
    wrapper = functools.wraps(original)(make(original))
    wrapper.__mtpsim_wrapped__ = original  # type: ignore[attr-defined]
    setattr(cls, name, wrapper)


def _check_trace_is_eager(vllm_config: Any, traced: bool) -> None:
    model_config = getattr(vllm_config, "model_config", None)
    if not getattr(model_config, "enforce_eager", False) or traced:
        raise PluginConfigError("mtpsim plugin: trace mode (MTPSIM_TRACE=1) needs eager "
                                "execution (--enforce-eager, compilation mode 0): module hooks "
                                "do not run when a CUDA graph or a compiled graph is replayed")


def install(settings: PluginSettings) -> Recorder:
    """Patch the installed vLLM's MTPSpeculator once per process; repeated calls are no-ops."""
    mtp_cls, base_cls = load_speculator_classes()
    existing = _installed(mtp_cls, settings)
    if existing is not None:
        return existing
    check_speculator_shape(mtp_cls, base_cls)
    if settings.trace_dir is not None:
        settings.trace_dir.mkdir(parents=True, exist_ok=True)
    rec = Recorder(settings)
    _wrap_speculator(mtp_cls, rec, settings)
    setattr(mtp_cls, STATE_ATTR, rec)
    # Rows and counts since the last periodic flush, however the process ends (fork included).
    exit_flush.arm(rec)
    return rec


def _installed(mtp_cls: type, settings: PluginSettings) -> Recorder | None:
    """The recorder of an earlier `install` in this process, if any; asking again with other
    settings is refused (one policy per process)."""
    existing: Recorder | None = vars(mtp_cls).get(STATE_ATTR)
    if existing is not None and existing.settings != settings:
        raise PluginConfigError(f"mtpsim plugin: already installed with {existing.settings}, "
                                f"asked again with {settings}")
    return existing


def _wrap_speculator(mtp_cls: type, rec: Recorder, settings: PluginSettings) -> None:
    """Wrap the speculator's model load, its four draft-loop hooks, capture and propose."""
    _wrap(mtp_cls, "load_draft_model", _on_load_draft_model(rec, settings))
    _wrap(mtp_cls, "on_prefill_begin", _around(lambda: rec.begin("prefill"), None))
    _wrap(mtp_cls, "on_prefill_end", _on_prefill_end(rec, settings))
    _wrap(mtp_cls, "on_multi_step_decode_begin", _around(None, lambda: rec.begin("decode")))
    _wrap(mtp_cls, "on_multi_step_decode_end", _around(None, rec.end))
    _wrap(mtp_cls, "capture", _on_capture(rec))
    _wrap(mtp_cls, "propose", _on_propose(rec))



def _on_load_draft_model(rec: Recorder, settings: PluginSettings) -> Wrapping:
    """After the draft model loads: set the policy switch, then hook its sparse attention."""
    def make(orig: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            model = orig(self, *args, **kwargs)
            _set_share_flag(self, model, settings)
            _hook_draft_model(rec, self, model, settings)
            return model
        return wrapper
    return make


def _set_share_flag(spec: Any, model: Any, settings: PluginSettings) -> None:
    """Force the speculator's share switch to the policy; `share` needs a draft model that can
    skip its top-k and compact it, and no prefill context parallelism."""
    want_share = settings.policy == "share"
    pcp = spec.vllm_config.parallel_config.prefill_context_parallel_size
    capable = (pcp == 1 and hasattr(model.model, "set_skip_topk")
               and hasattr(model.model, "compact_topk_indices"))
    if want_share and not capable:
        raise PluginConfigError("mtpsim plugin: policy share needs a draft model with "
                                "set_skip_topk/compact_topk_indices and prefill context "
                                f"parallel size 1 (got {pcp})")
    if getattr(spec, SHARE_FLAG) != want_share:
        logger.info("mtpsim: %s forced from %s to %s (MTPSIM_POLICY=%s)", SHARE_FLAG,
                    getattr(spec, SHARE_FLAG), want_share, settings.policy)
    setattr(spec, SHARE_FLAG, want_share)


def _hook_draft_model(rec: Recorder, spec: Any, model: Any, settings: PluginSettings) -> None:
    """Record how the engine runs (policy switch, compilation) and attach the counters."""
    # Under compilation hooks are traced into the graph once, not run per call; but
    # vLLM compiles only @support_torch_compile classes: decided from the model.
    traced = hooks_traced(model, spec.vllm_config)
    if settings.trace:
        _check_trace_is_eager(spec.vllm_config, traced)
    rec.counts.share_flag = settings.policy == "share"
    rec.write_trace = settings.trace and _is_first_rank()
    rec.counts.compile_mode = compile_mode(spec.vllm_config)
    rec.counts.hooks_traced = traced
    # Device counts always (graphs replay them, compilation traces them); hooks only
    # where they run per call.
    step = getattr(spec, "current_draft_step", None)
    hooked = rec.counts.hooked_layers = rec.attach(
        model, eager_hooks=not traced, num_steps=spec.num_speculative_steps,
        step=step if isinstance(step, torch.Tensor) else None)
    logger.info("mtpsim: policy %s, %d MTP sparse-attention layer(s) hooked",
                settings.policy, hooked)
    rec.flush()


def _around(before: Callable[[], None] | None, after: Callable[[], None] | None) -> Wrapping:
    """A draft-loop hook `(self, num_reqs)` with a recorder call before and/or after it."""
    def make(orig: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, num_reqs: int) -> None:
            if before is not None:
                before()
            orig(self, num_reqs)
            if after is not None:
                after()
        return wrapper
    return make


def _on_prefill_end(rec: Recorder, settings: PluginSettings) -> Wrapping:
    """End of draft step 0; in trace mode under `share`, check that the compaction moved each
    request's top-k row from its last token's slot to its request's slot."""
    def make(orig: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, num_reqs: int) -> None:
            check = (settings.trace and not rec.in_capture and getattr(self, SHARE_FLAG)
                     and self.num_speculative_steps > 1)
            expected: list[tuple[torch.Tensor, torch.Tensor]] = []
            if check:
                slots = self.last_token_indices[:num_reqs]  # [num_reqs]
                for bufs in _mtp_buffers(self.model):
                    expected.append((bufs, bufs[slots].clone()))
            orig(self, num_reqs)
            for buf, want in expected:
                ok = rows_equal(buf[:num_reqs], want)
                rec.counts.compaction_rows_checked += int(ok.numel())
                rec.counts.compaction_rows_wrong += int((~ok).sum().item())
            rec.phase = "idle"
        return wrapper
    return make


def _on_capture(rec: Recorder) -> Wrapping:
    """CUDA-graph capture: counted apart from served traffic, flushed when it ends."""
    def make(orig: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            rec.in_capture = True
            rec.set_device_context(served=False)
            try:
                return orig(self, *args, **kwargs)
            finally:
                rec.in_capture = False
                rec.flush()
        return wrapper
    return make


def _on_propose(rec: Recorder) -> Wrapping:
    """One propose call: served or not (profiling, warm-up, DP sync), and in trace mode the
    verdicts on the drafts it verified."""
    def make(orig: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(orig)

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            bound = sig.bind(self, *args, **kwargs).arguments
            # Profiling, warm-up and DP-sync runs are not served traffic: counted apart.
            rec.in_dummy = (bool(bound.get("dummy_run", False))
                            or _startup_batch(bound.get("input_batch")))
            rec.set_device_context(served=not rec.in_dummy)
            try:
                if rec.write_trace and not rec.in_dummy:
                    _record_verify(rec, bound)
                return orig(self, *args, **kwargs)
            finally:
                rec.in_dummy = False
        return wrapper
    return make


def uninstall() -> None:
    """Undo `install` (tests): restore every wrapped attribute of MTPSpeculator."""
    mtp_cls, _ = load_speculator_classes()
    if STATE_ATTR not in vars(mtp_cls):
        return
    exit_flush.disarm(vars(mtp_cls)[STATE_ATTR])
    for name in _WRAPPED:
        fn = vars(mtp_cls).get(name)
        original = getattr(fn, "__mtpsim_wrapped__", None)
        if original is None:
            continue
        if original is getattr(super(mtp_cls, mtp_cls), name, None):
            delattr(mtp_cls, name)  # was inherited before install
        else:
            setattr(mtp_cls, name, original)
    delattr(mtp_cls, STATE_ATTR)


def _mtp_buffers(draft_model: Any) -> list[torch.Tensor]:
    seen: dict[int, torch.Tensor] = {}
    for module in draft_model.modules():
        if hasattr(module, "skip_topk") and isinstance(getattr(module, "indexer", None),
                                                       torch.nn.Module):
            buf = _topk_buffer(module)
            seen.setdefault(buf.data_ptr(), buf)
    return list(seen.values())


def _record_verify(rec: Recorder, a: dict[str, Any]) -> None:
    """One row per request that had drafts verified: context length, drafted, accepted."""
    batch = a["input_batch"]
    n = batch.num_reqs
    rec.call += 1
    t = round(time.monotonic() - rec._t0, 6)
    rec.req_ids = list(batch.req_ids[:n])
    drafted = batch.num_draft_tokens_per_req
    if drafted is None:
        return
    sampled = a["num_sampled"][:n].tolist()
    seq_lens = batch.seq_lens[:n].tolist()
    for i in range(n):
        d = int(drafted[i])
        if d > 0:
            # seq_lens = computed tokens + the 1 + d this step ran; the trace's context is what
            # came before the verified drafts (prompt + output so far, as the reference engine
            # records it), so the drafts are not counted.
            rec.add_trace({"kind": "verify", "call": rec.call, "time_s": t, "req": rec.req_ids[i],
                           "context_len": seq_lens[i] - d, "drafted": d,
                           "accepted": max(int(sampled[i]) - 1, 0)})


def _startup_batch(batch: Any) -> bool:
    """A batch of vLLM's own warm-up requests (MRV2 warmup.py, dummy runs), not served ones."""
    n = getattr(batch, "num_reqs", 0)
    ids = list(getattr(batch, "req_ids", None) or [])[:n]
    return bool(ids) and all(str(r).startswith(STARTUP_REQ_PREFIXES) for r in ids)


def _is_first_rank() -> bool:
    try:
        from vllm.distributed.parallel_state import get_tensor_model_parallel_rank

        return get_tensor_model_parallel_rank() == 0
    except Exception:  # not initialised (tests, single process)
        return True
