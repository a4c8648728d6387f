"""Top-k reuse policies and the speculator lifecycle hooks they plug into (torch-free).

The hooks mirror vLLM 0.33.0 `TargetDependentARSpeculator` (Model Runner V2): four no-op
methods, each `(self, num_reqs: int) -> None`, fired in both CUDA-graph capture and propose,
so any state they toggle is identical at capture and replay. A policy is a subscriber to these
hooks; the generic draft loop never branches on the policy.
"""

from __future__ import annotations

# name -> one-line meaning; the order is the report's column order.
POLICIES: dict[str, str] = {
    "fresh": "the MTP layer runs its indexer at every draft step (sharing off)",
    "share": "draft steps >= 1 reuse step 0's top-k row of the last accepted token (vLLM)",
    "share_recent": "as share, plus the drafted positions p+1..p+s replacing the lowest-ranked",
    "target_share": "the MTP layer never runs its indexer; it uses the target's last-layer "
    "selection (known-bad control)",
}


class SpeculatorHooks:
    """No-op lifecycle hooks, called by the draft loop in this order per propose():
    on_prefill_begin -> draft step 0 -> on_prefill_end -> on_multi_step_decode_begin ->
    draft steps 1..k-1 -> on_multi_step_decode_end."""

    def on_prefill_begin(self, num_reqs: int) -> None: ...

    def on_prefill_end(self, num_reqs: int) -> None: ...

    def on_multi_step_decode_begin(self, num_reqs: int) -> None: ...

    def on_multi_step_decode_end(self, num_reqs: int) -> None: ...
