"""Step cost from measured phase timings: each phase's seconds are a non-negative combination
of step features (`cost_features`), fitted by mtpsim.calibration.fit to a trace's phase timings
and used to price simulated steps; plus the host gap between steps. Parameters: a calibration's
`CostFit` (per phase: feature names and seconds per unit; `gap_s`).

`StepShape` is how the simulator describes one engine step's batch to either cost model (this
one or mtpsim.models.roofline).

The target phases' features follow the model family's layers (mtpsim.models.families): the
indexer's per-pair features exist where its layers run an indexer, and linear-attention layers
add a per-request state feature to verification (each decoding request's recurrent state read
and written once per step, whatever its context).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from mtpsim.dataclass import dataclass
from mtpsim.models.families import Stack

Num = float | np.ndarray


@dataclass(slots=True)
class StepShape:
    """One engine step's batch (fields may be arrays over steps): what the simulator prices, and
    what the fitted cost reads back from a trace (mtpsim.calibration.fit.step_quantities).

    decode requests verify k+1 tokens each; `draft_*` are the requests that draft after the step
    (decoding ones plus those whose prompt completes in it). Contexts count keys up to the last
    accepted token."""

    num_decode: Num = 0
    decode_ctx: Num = 0.0  # sum of contexts of decoding requests
    decode_keys: Num = 0.0  # sum of min(context, top-k) of decoding requests
    num_draft: Num = 0
    draft_ctx: Num = 0.0
    draft_keys: Num = 0.0
    prefill_tokens: Num = 0
    prefill_keys: Num = 0.0  # sum over prompt tokens of min(position + 1, top-k)
    prefill_pairs: Num = 0.0  # sum over prompt tokens of (position + 1): indexer query-key pairs
    prefill_reads: Num = 0.0  # sum over chunks of their end position (indexer keys read once)
    prefill_done: Num = 0  # chunks that complete a prompt (their last token is sampled)
    # what the batch's padding adds to decode_ctx / draft_ctx: sum over the decoding (drafting in
    # the batch's call) requests of (the longest context among them - their own); 0 when their
    # contexts are equal. Only a calibration fitted with indexer_keys = "padded" prices it.
    decode_pad: Num = 0.0
    draft_pad: Num = 0.0


# How a fitted step cost counts the indexer's keys (the calibration file's cost.indexer_keys):
# "own": each request's own context (what the features always counted); "padded": every decoding
# or drafting request at its batch's longest context, as the reference engine's batched indexer
# scores them (mtpsim/engine/model.py: `n_keys = input_pos.max() + 1` for all rows of a batch).
INDEXER_KEYS = ("own", "padded")

# How a fitted step cost prices the draft phases' calls (the fit's `draft_calls` option): "shared"
# (one per-call price for the batch's call and each new prompt's, what the fit always did) or
# "prompt" (each new prompt's draft calls also carry the feature `prompt_calls`, a non-negative
# price on top: the reference engine drafts a freshly prefilled prompt in calls of its own, one
# request at a fresh context, apart from the batch's one batched call). A calibration file records
# it by listing `prompt_calls` among the draft phases' features; its pricing follows the list.
DRAFT_CALLS = ("shared", "prompt")
PROMPT_CALL_PHASES = ("draft_prefill", "draft_decode_indexer", "draft_decode_rest")


def padded(x: StepShape) -> StepShape:
    """`x` with the decoding and drafting contexts counted as (requests x the batch's longest):
    the padding added to decode_ctx and draft_ctx (and zeroed, so applying it twice is once).
    Prompts that complete in the step draft in calls of their own, at their own length."""
    zero = np.zeros_like(np.asarray(x.decode_pad, float))
    return replace(x, decode_ctx=np.add(x.decode_ctx, x.decode_pad),
                   draft_ctx=np.add(x.draft_ctx, x.draft_pad), decode_pad=zero,
                   draft_pad=np.zeros_like(np.asarray(x.draft_pad, float)))


# ---- fitted features ------------------------------------------------------------------------
# Per phase that runs the sparse attention: its per-key feature, the per-row twin, and its
# per-call feature (None: negligible). With the attention seconds a trace records (Trace
# `attention`), those are fitted on the per-key and per-call features (the attention's own fixed
# cost per model call: sort, gather and softmax launches in every layer) and the rest of the
# phase on the other features; without them one top-k cannot tell the per-key feature from its
# per-row twin, and the twin is left out (all per-row work priced per key).
KEY_FEATURES: dict[str, tuple[str, str, str | None]] = {
    "prefill": ("token_keys", "tokens", None), "verify": ("row_keys", "rows", "steps"),
    "draft_prefill": ("row_keys", "rows", "calls"), "draft_decode_rest": ("row_keys", "rows", "calls")}


def cost_features(x: StepShape, k: int, topk: int,
                  stack: Stack | None = None) -> dict[str, dict[str, np.ndarray]]:
    """phase -> feature name -> value; a phase's seconds are a non-negative combination.
    `stack`: the target's layer kinds (None: every layer MLA with its own indexer, as
    DeepSeek-V3.2 and the reference engine).

    Rows that attend are priced twice: per row (projections, MLP: independent of top-k) and per
    row *and attended key* (`*_keys` = rows x top-k: the reference engine sorts, gathers and
    attends a static top-k-wide block of keys and values for every query row). The indexer is
    priced per query-key pair (`pairs`, `ctx`)."""
    q, s = k + 1, k - 1
    has_dec = (np.asarray(x.num_decode, float) > 0).astype(float)
    calls = has_dec + np.asarray(x.prefill_done, float)  # propose() calls: one batch + one per prompt
    verify_rows = np.multiply(q, x.num_decode)
    draft_prefill_rows = verify_rows + np.asarray(x.prefill_tokens, float)
    f = {
        # no per-prompt term: with prompt lengths varying it soaks up noise that then fails to
        # scale with top-k; per-prompt host work is priced in `overhead`
        "prefill": {"tokens": x.prefill_tokens, "token_keys": np.multiply(topk, x.prefill_tokens),
                    "pairs": x.prefill_pairs},
        "verify": {"steps": has_dec, "rows": verify_rows, "row_keys": np.multiply(topk, verify_rows),
                   "ctx": np.multiply(q, x.decode_ctx)},
        "draft_prefill": {"calls": calls, "rows": draft_prefill_rows,
                          "row_keys": np.multiply(topk, draft_prefill_rows),
                          "pairs": np.multiply(q, x.decode_ctx) + x.prefill_pairs,
                          "requests": x.num_draft},
        "draft_decode_indexer": {"calls": s * calls, "rows": np.multiply(s, x.num_draft),
                                 "ctx": np.multiply(s, x.draft_ctx)},
        "draft_decode_rest": {"calls": s * calls, "rows": np.multiply(s, x.num_draft),
                              "row_keys": np.multiply(s * topk, x.num_draft)},
        "rejection_sample": {"steps": has_dec, "requests": x.num_decode,
                             "draft_tokens": np.multiply(k, x.num_decode)},
        "overhead": {"steps": np.ones_like(has_dec), "requests": x.num_decode,
                     "prompts": x.prefill_done},
    }
    for p in PROMPT_CALL_PHASES:  # priced only by a fit with draft_calls = "prompt" (it lists it)
        f[p]["prompt_calls"] = (1 if p == "draft_prefill" else s) * np.asarray(x.prefill_done, float)
    if stack is not None:
        if not stack.indexer:  # no target layer scores keys (the MTP layer's indexer stays)
            del f["prefill"]["pairs"], f["verify"]["ctx"]
        if stack.linear:
            f["verify"]["states"] = x.num_decode
    return {p: {n: np.asarray(v, float) for n, v in d.items()} for p, d in f.items()}
