"""Top-k reuse policies and the speculator lifecycle hooks they plug into (torch-free).

The hooks mirror vLLM 0.33.0 `TargetDependentARSpeculator` (Model Runner V2): four no-op
methods, each `(self, num_reqs: int) -> None`, fired in both CUDA-graph capture and propose,
so any state they toggle is identical at capture and replay. A policy is a subscriber to these
hooks; the generic draft loop never branches on the policy.

Each policy also declares what it does (`Traits`), once, beside its hooks; the models, fitters,
comparisons and runners read the traits instead of listing policy names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol, runtime_checkable

from mtpsim.dataclass import dataclass
from mtpsim.errors import UserError

# name -> one-line meaning; the order is the report's column order.
POLICIES: dict[str, str] = {
    "fresh": "the MTP layer runs its indexer at every draft step (sharing off)",
    "share": "draft steps >= 1 reuse step 0's top-k row of the last accepted token (vLLM)",
    "share_recent": "as share, plus the drafted positions p+1..p+s replacing the lowest-ranked",
    "target_share": "the MTP layer never runs its indexer; it uses the target's last-layer "
    "selection (known-bad control)",
}


BASELINE = "fresh"  # the policy every other is compared with (sharing off)
# The one run of an experiment at num_speculative_tokens = 0 (plain decoding): with no draft
# step there is no top-k to reuse, so every policy is the same run; it is reported once under
# this name. Not a reuse policy (not in POLICIES): no hooks, and a file cannot list it.
NO_MTP = "no_mtp"


@dataclass(frozen=True, slots=True)
class Traits:
    """What a policy does to the MTP layer's top-k selection, read by every model and report.

    `indexer`: draft steps at which the MTP layer runs its own indexer ("every", "step0",
    "never"); a step that runs it selects exactly as `fresh` does. `later_rows`: what draft
    steps >= 1 attend through when they do not run it ("own": step 0's row, compacted to each
    request's last accepted token; "target": the target's last-layer row; "": nothing reused).
    `appends_drafted`: the drafted positions are written into the reused row. `vllm`: vLLM
    0.33.0 can run the policy (`index_share_for_mtp_iteration` on or off)."""

    indexer: Literal["every", "step0", "never"]
    later_rows: Literal["", "own", "target"] = ""
    appends_drafted: bool = False
    vllm: bool = False

    def runs_indexer(self, step: int) -> bool:
        """Whether the MTP indexer runs at draft `step` (0-based), i.e. selects as fresh."""
        return self.indexer == "every" or (self.indexer == "step0" and step == 0)

    def reused_fraction(self, k: int) -> float:
        """The share of the k draft steps that do not run the indexer (select unlike fresh)."""
        return sum(not self.runs_indexer(s) for s in range(k)) / k if k > 0 else 0.0

    @property
    def step0_as_fresh(self) -> bool:
        """Draft step 0 is computed exactly as under `fresh` (placebo pairs; pooled fits)."""
        return self.runs_indexer(0)

    @property
    def reuses_own_row(self) -> bool:
        """Steps >= 1 reuse step 0's own row (compaction; the overlap -> acceptance link)."""
        return self.later_rows == "own"


class SpeculatorHooks:
    """No-op lifecycle hooks, called by the draft loop in this order per propose():
    on_prefill_begin -> draft step 0 -> on_prefill_end -> on_multi_step_decode_begin ->
    draft steps 1..k-1 -> on_multi_step_decode_end."""

    def on_prefill_begin(self, num_reqs: int) -> None: ...

    def on_prefill_end(self, num_reqs: int) -> None: ...

    def on_multi_step_decode_begin(self, num_reqs: int) -> None: ...

    def on_multi_step_decode_end(self, num_reqs: int) -> None: ...


@runtime_checkable
class TopkSharingModel(Protocol):
    """What a draft model must offer for the policies (checked once, at engine start-up).
    `set_skip_topk`/`compact_topk_indices` are vLLM's names; the other two serve mtpsim's
    extra policies. `last_token_indices` is a 1-D integer tensor of step-0 row indices."""

    def set_skip_topk(self, skip: bool) -> None: ...

    def compact_topk_indices(self, last_token_indices: Any) -> None: ...

    def set_append_recent(self, on: bool) -> None: ...

    def set_use_target_topk(self, on: bool) -> None: ...


class DraftState(Protocol):
    """The speculator's input buffers the hooks read: each request's last accepted row in step 0."""

    last_token_indices: Any  # [max_num_reqs], sliced [:num_reqs]
    num_speculative_steps: int  # draft steps per speculation (k): step 0, then 1 .. k-1


class Fresh(SpeculatorHooks):
    """The MTP indexer runs at every draft step: sharing off, every hook a no-op."""

    TRAITS = Traits(indexer="every", vllm=True)

    def __init__(self, model: TopkSharingModel, state: DraftState) -> None:
        self.model, self.state = model, state


class Share(Fresh):
    """vLLM 0.33.0 `MTPSpeculator`: steps >= 1 reuse step 0's row of the last accepted token."""

    TRAITS = Traits(indexer="step0", later_rows="own", vllm=True)

    def on_prefill_begin(self, num_reqs: int) -> None:
        # Step 0 computes its own top-k. Unconditional, so a step that died midway cannot
        # leave reuse mode on.
        self.model.set_skip_topk(False)

    def on_prefill_end(self, num_reqs: int) -> None:
        # Step 0 wrote one row per query token; without compaction request i would read
        # request 0's rows (upstream bug #47238). As vLLM 0.33.0's MTPSpeculator, only when a
        # later draft step will read them: at k = 1 `share` runs fresh's program.
        if self.state.num_speculative_steps > 1:
            self.model.compact_topk_indices(self.state.last_token_indices[:num_reqs])

    def on_multi_step_decode_begin(self, num_reqs: int) -> None:
        self.model.set_skip_topk(True)

    def on_multi_step_decode_end(self, num_reqs: int) -> None:
        self.model.set_skip_topk(False)


class ShareRecent(Share):
    """As `share`, plus the drafted positions p+1..p+s replacing the lowest-ranked entries."""

    TRAITS = Traits(indexer="step0", later_rows="own", appends_drafted=True)

    def on_multi_step_decode_begin(self, num_reqs: int) -> None:
        super().on_multi_step_decode_begin(num_reqs)
        self.model.set_append_recent(True)

    def on_multi_step_decode_end(self, num_reqs: int) -> None:
        super().on_multi_step_decode_end(num_reqs)
        self.model.set_append_recent(False)


class TargetShare(Share):
    """Known-bad control: the MTP layer never runs its indexer; step 0 takes the target's
    last-layer rows and steps >= 1 reuse the one of the last accepted token."""

    TRAITS = Traits(indexer="never", later_rows="target")

    def on_prefill_begin(self, num_reqs: int) -> None:
        super().on_prefill_begin(num_reqs)
        self.model.set_use_target_topk(True)

    def on_prefill_end(self, num_reqs: int) -> None:
        super().on_prefill_end(num_reqs)  # compacts the target's rows like its own
        self.model.set_use_target_topk(False)


NO_MTP_TRAITS = Traits(indexer="every", vllm=True)  # no draft step: nothing to skip or reuse

POLICY_CLASSES: dict[str, type[Fresh]] = {
    "fresh": Fresh, "share": Share, "share_recent": ShareRecent, "target_share": TargetShare,
}


def traits(name: str) -> Traits:
    """The declared traits of policy `name` (ValueError if unknown)."""
    if name == NO_MTP:
        return NO_MTP_TRAITS
    try:
        return POLICY_CLASSES[name].TRAITS
    except KeyError:
        raise ValueError(f"unknown policy {name!r}") from None


def policies_where(test: Callable[[Traits], bool]) -> tuple[str, ...]:
    """Names of the policies whose traits pass `test`, in report order."""
    return tuple(n for n in POLICIES if test(POLICY_CLASSES[n].TRAITS))


def check_model(model: object) -> None:
    """Fail once, at start-up, if `model` lacks a `TopkSharingModel` method."""
    missing = [m for m in ("set_skip_topk", "compact_topk_indices", "set_append_recent",
                           "set_use_target_topk") if not callable(getattr(model, m, None))]
    if missing:
        raise TypeError(f"{type(model).__name__} is not a TopkSharingModel: missing {missing}")


def make_policy(name: str, model: TopkSharingModel, state: DraftState) -> Fresh:
    """The policy `name` subscribed to `model` (checked) and the speculator's `state`."""
    if name not in POLICY_CLASSES:
        raise UserError(None, "policy", f"expected one of {', '.join(POLICY_CLASSES)}, got {name!r}")
    check_model(model)
    return POLICY_CLASSES[name](model, state)


def policy_flag(names: list[str] | None, flag: str = "--policy") -> list[str]:
    """The policies a `-p/--policy` flag names, checked here so an unknown one is blamed on
    the flag (not on the `policies=` override it becomes)."""
    from mtpsim.errors import UserError

    for name in names or []:
        if name not in POLICIES:
            raise UserError(None, flag, f"expected one of {', '.join(POLICIES)}, got {name!r}")
    if names and len(set(names)) != len(names):
        raise UserError(None, flag, f"expected each policy once, got {', '.join(names)}")
    return list(names or [])
