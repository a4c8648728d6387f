"""GPU memory of one engine: the weights per GPU and the paged KV cache vLLM allocates from the
rest, in blocks of `engine.block_size` tokens.

vLLM 0.33.0 sizes the cache once at start-up: `v1/worker/gpu_worker.py`
`Worker.determine_available_memory` (~line 641) takes `gpu_memory_utilization` x HBM minus what
a profile run peaked at (weights, activations, CUDA graphs), and `v1/core/kv_cache_planning.py`
`get_kv_cache_config_from_groups` (~line 681) divides it into `available // bytes_per_block`
blocks, one of which the block pool keeps as its null block (`v1/core/block_pool.py`). A token's
bytes are the MLA latent of every attention layer (bf16 under vLLM's default for the FP8
checkpoint, 1,152 B; 656 B in the fp8_ds_mla layout: mtpsim.models.roofline `kv_cache_dtype`) plus
the indexer key of every indexer layer (132 B), MTP layers included when they run
(`CostModel.kv_bytes_per_token`); docs/hardware.md, "Memory", works the figures through. MLA's
latent is not split by TP: every rank of an engine holds it whole, so the token capacity is one
GPU's. Everything but weights and KV (activations, graphs, communication buffers) is
`engine.non_kv_memory_gib`, an assumption (vLLM measures it; mtpsim cannot). vLLM refuses to
start when one request of max_model_len does not fit, and so does `check_fits`. A family with
linear-attention layers (mtpsim.models.families) also holds a recurrent state per request,
whatever its length: `engine.max_num_seqs` requests' states are set aside before the blocks are
counted (vLLM pages them with the KV cache; assumed).
"""

from __future__ import annotations

import math

from mtpsim.dataclass import dataclass
from mtpsim.errors import SpecError
from mtpsim.models.roofline import CostModel
from mtpsim.policies import BASELINE
from mtpsim.spec import Experiment

NULL_BLOCKS = 1  # vLLM's BlockPool holds one block back as the null block


@dataclass(frozen=True, slots=True)
class KvCacheSize:
    """One engine's KV cache: `blocks` of `block_size` tokens, and what sized it (bytes per GPU)."""

    blocks: int
    block_size: int
    bytes_per_token: float
    weights: float
    budget: float  # gpu_memory_utilization x HBM
    states: float = 0.0  # linear-attention states of max_num_seqs requests

    @property
    def tokens(self) -> int:
        return self.blocks * self.block_size

    def blocks_for(self, tokens: float) -> int:
        return math.ceil(tokens / self.block_size)


def kv_cache_size(exp: Experiment) -> KvCacheSize:
    """The KV cache one engine (one DP rank) gets; may be 0 blocks (check_fits refuses that)."""
    cm = CostModel(exp, BASELINE)
    e = exp.engine
    budget = exp.hardware.memory_gib * 2**30 * e.gpu_memory_utilization
    weights = cm.weight_bytes_per_gpu()
    per_token = cm.kv_bytes_per_token()
    free = budget - weights - e.non_kv_memory_gib * 2**30
    states = e.max_num_seqs * cm.state_bytes_per_request()
    if states:
        free = free - states
    blocks = max(0, int(free // (per_token * e.block_size)) - NULL_BLOCKS)
    return KvCacheSize(blocks, e.block_size, per_token, weights, budget, states)


def request_tokens(exp: Experiment, input_len: float, output_len: float) -> float:
    """KV slots a request holds at its last step: its prompt and output so far (input + output
    - 1 computed), the k + 1 tokens it verifies and k lookahead slots for the drafts
    (vLLM `Scheduler.schedule` passes `num_lookahead_tokens` = k to `allocate_slots`)."""
    return input_len + output_len - 1 + (exp.k + 1) + exp.k


def check_fits(exp: Experiment, source: str | None = None,
               max_len_field: str = "engine.max_model_len") -> KvCacheSize:
    """The weights must fit beside the KV cache, and the cache must hold one request of the
    workload's longest (fixed or uniform lengths; the simulator checks each drawn request):
    anything less, vLLM would refuse to start or never finish the request. `max_len_field`: the
    field a message names as setting max_model_len (another file's, where the spec is made
    from one: `mtpsim advise`'s deployment.max_model_len)."""
    kv = kv_cache_size(exp)
    src = source or exp.source
    e = exp.engine
    if kv.weights + e.non_kv_memory_gib * 2**30 + kv.states >= kv.budget:
        raise SpecError(src, "engine.tp", f"expected enough GPUs for the weights: "
                        f"{kv.weights / 2**30:.0f} GiB per GPU at tp={e.tp} plus "
                        f"{e.non_kv_memory_gib:g} GiB of engine.non_kv_memory_gib"
                        + (f" and {kv.states / 2**30:.1f} GiB of linear-attention states"
                           if kv.states else "") + " exceeds "
                        f"{kv.budget / 2**30:.0f} GiB (hardware.memory_gib x gpu_memory_utilization)")
    check_max_model_len(exp, kv, src, max_len_field)
    w = exp.workload
    prompt = _longest(w.input_len, w.input_len_distribution, w.input_len_spread)
    output = _longest(w.output_len, w.output_len_distribution, w.output_len_spread)
    check_within_max_model_len(exp, prompt, output, src, max_len_field)
    check_holds_one(exp, kv, request_tokens(exp, prompt, output), src)
    return kv


def check_within_max_model_len(exp: Experiment, prompt: float, output: float,
                               source: str | None = None,
                               max_len_field: str = "engine.max_model_len") -> None:
    """vLLM rejects a request whose prompt and max_tokens exceed max_model_len (the server
    answers 400; the benchmark counts it failed), which mtpsim does not simulate: one line.
    Where max_model_len is the model's own maximum context, no setting raises it: said so."""
    longest = max_model_len(exp)
    if longest and prompt + output > longest:
        model_max = exp.model.max_position_embeddings
        why = (f"{max_len_field} sets it" if longest != model_max else
               "the model's maximum context, model.max_position_embeddings: no max_model_len "
               "serves more")
        raise SpecError(source or exp.source, "workload.input_len",
                        f"expected prompt + output tokens within max_model_len = {longest:,} "
                        f"(vLLM rejects a longer request; {why}): the "
                        f"longest request is {prompt:,.0f} + {output:,.0f}")


def max_model_len(exp: Experiment) -> int:
    """vLLM's max_model_len: the flag, else the model's configured context (0 = unknown)."""
    return exp.engine.max_model_len or exp.model.max_position_embeddings


def check_max_model_len(exp: Experiment, kv: KvCacheSize, source: str | None = None,
                        max_len_field: str = "engine.max_model_len") -> None:
    """vLLM refuses to start when the cache cannot hold one request of max_model_len tokens
    (`v1/core/kv_cache_planning.py` `check_enough_kv_cache_memory`, the null block reserved)."""
    longest = max_model_len(exp)
    if longest and kv.blocks_for(longest) > kv.blocks:
        raise SpecError(source or exp.source, "engine.max_model_len",
                        f"expected a KV cache that holds one request of max_model_len = "
                        f"{longest:,} tokens, as vLLM checks before it starts: that needs "
                        f"{kv.blocks_for(longest):,} blocks of {kv.block_size}, the cache has "
                        f"{kv.blocks:,} ({kv.tokens:,} tokens per GPU beside "
                        f"{kv.weights / 2**30:.1f} GiB of weights at tp={exp.engine.tp}); set "
                        f"{max_len_field} lower or use more or larger GPUs")


def check_holds_one(exp: Experiment, kv: KvCacheSize, tokens: float, source: str | None = None) -> None:
    """One line, exit 2, if a single request of `tokens` KV slots cannot fit the cache."""
    if kv.blocks_for(tokens) > kv.blocks:
        raise SpecError(source or exp.source, "engine.gpu_memory_utilization",
                        f"expected a KV cache that holds one request: a request of {tokens:,.0f} "
                        f"tokens needs {kv.blocks_for(tokens):,} blocks of {kv.block_size}, the "
                        f"cache has {kv.blocks:,} ({kv.tokens:,} tokens left per GPU beside "
                        f"{kv.weights / 2**30:.0f} GiB of weights at tp={exp.engine.tp})")


def _longest(mean: int, dist: str, spread: float) -> float:
    return mean * (1 + spread) if dist == "uniform" else mean
