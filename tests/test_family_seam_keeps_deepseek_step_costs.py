"""The model-family seam (mtpsim.models.families) prices DeepSeek-V3.2 and GLM-5.2 exactly as the
roofline did before it: every phase of a grid of steps (four policies, decode, mixed and prefill
steps, scalar and array shapes, TP/DP/EP and k variants), the prefill breakdown, weights, KV
bytes and KV blocks equal, to the last bit, the numbers recorded at 61cfcb0 before the refactor.

After a deliberate change to the cost equations rewrite the file and say why in the commit:
    python scripts/golden_step_costs.py --write
"""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("golden_step_costs",
                                                  ROOT / "scripts/golden_step_costs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _leaves(obj, path=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, f"{path}/{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, obj


def test_deepseek_and_glm_step_costs_equal_the_golden_file_bit_for_bit():
    mod = _script()
    want = json.loads(mod.GOLDEN.read_text())
    got = mod.price()
    assert set(got) == set(want) == set(mod.VARIANTS)
    got_leaves, want_leaves = dict(_leaves(got)), dict(_leaves(want))
    assert got_leaves.keys() == want_leaves.keys()
    moved = [(k, want_leaves[k], v) for k, v in got_leaves.items() if v != want_leaves[k]]
    assert not moved, (f"{len(moved)} of {len(got_leaves)} numbers moved, e.g. {moved[:3]}; "
                       "after a deliberate change: python scripts/golden_step_costs.py --write")
    assert len(got_leaves) > 900  # the grid is priced, not an empty file


def test_the_golden_grid_tells_the_policies_and_variants_apart():
    want = json.loads(_script().GOLDEN.read_text())
    base = want["pr47352"]
    # a check that cannot pass vacuously: the variants and policies priced differ where they must
    assert base["fresh/decode-1"]["draft_decode_indexer"] > 0
    assert base["share/decode-1"]["draft_decode_indexer"] == 0
    assert want["pr47352-no-mtp"]["kv_bytes_per_token"] < base["kv_bytes_per_token"]
    assert want["glm-5.2-h200-tp8"]["weight_bytes_per_gpu"] != base["weight_bytes_per_gpu"]
