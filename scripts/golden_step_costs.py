"""Price a fixed grid of steps with the roofline (mtpsim.models.roofline) and write or check
tests/data/golden_step_costs.json: every phase's seconds, the prefill breakdown, weights and KV
bytes for DeepSeek-V3.2 (pr47352's setup and variants) and GLM-5.2.

The golden file pins the roofline's numbers bit for bit (tests/
test_family_seam_keeps_deepseek_step_costs.py), so a refactor cannot move them unnoticed. After a
deliberate change to the cost equations, rewrite it and say why in the commit:
    python scripts/golden_step_costs.py --write
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests/data/golden_step_costs.json"
EXPERIMENT = ROOT / "experiments/pr47352.toml"
VARIANTS: dict[str, list[str]] = {
    "pr47352": [],
    "pr47352-k1-piecewise": ["speculative.num_speculative_tokens=1",
                             'engine.cudagraph_mode="piecewise"'],
    "pr47352-dp4-ep": ["engine.dp=4", "engine.ep=true", "engine.tp=2"],
    "pr47352-no-mtp": ["speculative.num_speculative_tokens=0"],
    "glm-5.2-h200-tp8": ['model.preset="glm-5.2"', 'model.name="zai-org/GLM-5.2"',
                         'model.quantization="fp8"', 'hardware.preset="h200"', "engine.tp=8",
                         "workload.input_len=2048"],
}
# every GPU preset on pr47352's setup in fp8 at TP8 (nvfp4 needs FP4 tensor cores): pins what
# each preset's figures (bandwidth, tensor rates, SMs, topology) give a step
VARIANTS.update({f"pr47352-{gpu}-fp8": [f'hardware.preset="{gpu}"', 'model.quantization="fp8"',
                                         "engine.tp=8"]
                 for gpu in ("h100", "h20", "h200", "b200", "b300", "gb200", "gb300", "mi300x",
                             "mi355x")})
POLICIES = ("fresh", "share", "share_recent", "target_share")


def shapes() -> dict[str, dict]:
    """Steps to price: scalar decode, a decode batch over steps (arrays), mixed and prefill-only."""
    ctx = np.array([1_000.0, 10_000.0, 60_000.0])
    n = np.array([1, 32, 256])
    return {
        "decode-1": dict(num_decode=1, decode_ctx=5_000.0, decode_keys=2_048.0, num_draft=1,
                         draft_ctx=5_001.0, draft_keys=2_048.0),
        "decode-batch": dict(num_decode=n, decode_ctx=n * ctx, decode_keys=n * np.minimum(ctx, 2048),
                             num_draft=n, draft_ctx=n * (ctx + 1), draft_keys=n * np.minimum(ctx, 2048)),
        "mixed": dict(num_decode=16, decode_ctx=16 * 8_000.0, decode_keys=16 * 2_048.0, num_draft=17,
                      draft_ctx=17 * 8_000.0, draft_keys=17 * 2_048.0, prefill_tokens=4_096,
                      prefill_keys=4_096 * 2_048.0 - 2_047 * 2_048 / 2, prefill_pairs=4_096 * 6_144.0,
                      prefill_reads=8_192.0, prefill_done=1),
        "prefill-only": dict(prefill_tokens=8_192, prefill_keys=8_192 * 2_048.0 - 2_047 * 2_048 / 2,
                             prefill_pairs=8_192 * 4_096.5, prefill_reads=8_192.0, prefill_done=1,
                             num_draft=1, draft_ctx=8_192.0, draft_keys=2_048.0),
    }


def price() -> dict[str, object]:
    from mtpsim.models.cost import StepShape
    from mtpsim.models.memory import kv_cache_size
    from mtpsim.models.roofline import CostModel
    from mtpsim.spec import load_experiment

    out: dict[str, object] = {}
    for name, sets in VARIANTS.items():
        exp = load_experiment(EXPERIMENT, sets)
        cm = CostModel(exp, "fresh")
        kv = kv_cache_size(exp)
        row: dict[str, object] = {
            "weight_bytes_per_gpu": cm.weight_bytes_per_gpu(),
            "kv_bytes_per_token": cm.kv_bytes_per_token(), "kv_blocks": kv.blocks,
            "prefill_parts": {f"{t}@{s}": cm.prefill_parts(t, s)
                              for t, s in ((8_192, 0), (4_096, 8_192), (512, 100_000))}}
        for policy in POLICIES:
            pm = CostModel(exp, policy)
            for shape, fields in shapes().items():
                phases = pm.step(StepShape(**fields))
                row[f"{policy}/{shape}"] = {p: np.asarray(v, float).tolist() for p, v in phases.items()}
        out[name] = row
    return json.loads(json.dumps(out, default=float))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite the golden file")
    args = ap.parse_args()
    got = price()
    if args.write:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN.relative_to(ROOT)}")
        return 0
    want = json.loads(GOLDEN.read_text())
    if got != want:
        print("differs from the golden file", file=sys.stderr)
        return 1
    print("identical to the golden file")
    return 0


if __name__ == "__main__":
    sys.exit(main())
