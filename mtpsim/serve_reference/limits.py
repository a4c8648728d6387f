"""What a reference server can hold, checked before it starts: positions within the weights'
RoPE table, a top-k no wider than a request, and a preallocated KV cache that fits in memory."""

from __future__ import annotations

import os
from typing import Any

from mtpsim.errors import UserError

MAX_NUM_SEQS = 4096
FLOAT_BYTES = 4  # the reference engine's caches are float32


def physical_memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 2**40


def check_server_limits(config: dict[str, Any], max_model_len: int, max_num_seqs: int, k: int,
                        index_topk: int | None) -> None:
    """`config`: the weights' model config (n_layer, dim, index_head_dim, max_seq_len)."""
    table = int(config.get("max_seq_len", 0))
    if table and max_model_len + k + 1 > table:
        raise UserError(None, "--max-model-len", f"expected at most {table - k - 1} (the weights' "
                        f"RoPE table holds {table} positions, k = {k} drafts need {k + 1} more), "
                        f"got {max_model_len}")
    topk = index_topk or int(config.get("index_topk", 1))
    if topk > max_model_len:
        raise UserError(None, "speculative.index_topk", f"expected at most --max-model-len "
                        f"({max_model_len}), got {topk}")
    if max_num_seqs > MAX_NUM_SEQS:
        raise UserError(None, "--max-num-seqs", f"expected at most {MAX_NUM_SEQS}, got {max_num_seqs}")
    per_token = (int(config.get("n_layer", 1)) + 1) * (2 * int(config.get("dim", 1))
                                                       + int(config.get("index_head_dim", 0)))
    per_seq = (max_model_len + k + 1) * per_token * FLOAT_BYTES
    have = physical_memory_bytes() // 2
    if max_num_seqs * per_seq <= have:
        return
    within = f"within half this machine's memory ({have / 2**30:.1f} GiB)"
    if per_seq > have:  # one sequence alone does not fit: the length is what to lower
        longest = have // (per_token * FLOAT_BYTES) - k - 1
        raise UserError(None, "--max-model-len", f"expected at most {longest:,} tokens (one "
                        f"sequence's KV cache {within}), got {max_model_len:,} "
                        f"({per_seq / 2**30:.1f} GiB a sequence)")
    raise UserError(None, "--max-num-seqs", f"expected at most {have // per_seq:,} sequences of "
                    f"--max-model-len {max_model_len:,} tokens (their KV cache {within}), got "
                    f"{max_num_seqs:,} ({max_num_seqs * per_seq / 2**30:.1f} GiB)")
