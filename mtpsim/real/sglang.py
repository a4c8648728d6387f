"""SGLang behind `python -m sglang.launch_server`: DeepSeek-V3.2 MTP runs as EAGLE speculative
decoding, and top-k index sharing is the model config's `index_share_for_mtp_iteration`.

From SGLang's documentation and source (sgl-project/sglang):
- DeepSeek-V3.2 MTP: `--speculative-algorithm EAGLE --speculative-num-steps 3
  --speculative-eagle-topk 1 --speculative-num-draft-tokens 4`
  (https://docs.sglang.io/basic_usage/deepseek_v32.html, "Multi-token Prediction"): k draft
  steps, k + 1 draft tokens, one candidate per step.
- The EAGLE draft worker reuses step 0's indexer top-k at the later draft steps when
  `hf_config.index_share_for_mtp_iteration` is true and `speculative_eagle_topk == 1`
  (https://github.com/sgl-project/sglang/pull/28192); the config is overridden at start-up with
  `--json-model-override-args`, so the policy is a start-up choice, as in vLLM.
- With `--enable-metrics`, `/metrics` has the gauges `sglang:spec_accept_length` and
  `sglang:spec_accept_rate` (recent averages, per data-parallel rank), not vLLM's draft and
  per-position counters; there is no mtpsim plugin inside SGLang, so the indexer calls per draft
  step are not counted and "sharing engaged" cannot be judged from counts.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtpsim.errors import UserError
from mtpsim.real.backend import Capabilities, ModelServer, PolicyRunner

if TYPE_CHECKING:
    from mtpsim.result import Result
    from mtpsim.spec import Experiment
    from mtpsim.trace import Trace

HOST = "127.0.0.1"
SHARING = {"fresh": False, "share": True}  # policy -> index_share_for_mtp_iteration
GAUGES = ("sglang:spec_accept_length", "sglang:spec_accept_rate")


def sglang_serve_argv(exp: Experiment, policy: str, port: int) -> list[str]:
    """`python -m sglang.launch_server` for one policy (an argument list, no shell)."""
    e = exp.engine
    argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", exp.model.name,
            "--host", HOST, "--port", str(port), "--tp-size", str(e.tp),
            "--max-running-requests", str(e.max_num_seqs),
            "--mem-fraction-static", repr(e.gpu_memory_utilization),
            "--speculative-algorithm", "EAGLE",
            "--speculative-num-steps", str(exp.k),
            "--speculative-eagle-topk", "1",  # sharing is skipped for any other value
            "--speculative-num-draft-tokens", str(exp.k + 1),
            "--json-model-override-args",
            json.dumps({"index_share_for_mtp_iteration": SHARING[policy]}),
            "--random-seed", str(exp.seed), "--enable-metrics", "--trust-remote-code"]
    if e.pp > 1:
        argv += ["--pp-size", str(e.pp)]
    if not e.enable_chunked_prefill:
        argv += ["--chunked-prefill-size", "-1"]
    return argv


def read_gauges(text: str, names: tuple[str, ...] = GAUGES) -> dict[str, float]:
    """Prometheus text -> name: mean over its label sets (data-parallel ranks), for `names`;
    a name with no finite sample is left out."""
    seen: dict[str, list[float]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name = head.split("{", 1)[0].strip()
        if name in names:
            try:
                v = float(value)
            except ValueError:
                continue
            if math.isfinite(v):
                seen.setdefault(name, []).append(v)
    return {k: sum(v) / len(v) for k, v in seen.items()}


class Sglang(ModelServer):
    name, flag = "sglang", "--engine sglang"
    caps = Capabilities(mode="sglang", served=True, policies=tuple(SHARING),
                        parallelism=("engine.tp", "engine.pp"), gpus=True,
                        extras=("sglang", "serve"),
                        node_modules=("sglang", "mtpsim.vllm_runner.runner"))

    def refuse(self, exp: Experiment, policies: tuple[str, ...] | list[str]) -> None:
        if bad := [p for p in policies if p not in SHARING]:
            raise UserError(exp.source, "policies", f"expected only {', '.join(SHARING)} with "
                            f"--engine sglang ({', '.join(bad)} need model code SGLang lacks; "
                            "run them with --engine reference)")
        if not exp.model.name:
            raise UserError(exp.source, "model.name", "expected the Hugging Face id SGLang serves")
        if exp.vllm.distributed_executor_backend or exp.vllm.extra_args:
            field = ("vllm.distributed_executor_backend" if exp.vllm.distributed_executor_backend
                     else "vllm.extra_args")
            raise UserError(exp.source, field, "applies to --engine vllm, not --engine sglang")

    def runner(self, out: Path, trace: bool = False, bench_client: str = "mtpsim",
               smoke: bool = False, weights: str | None = None) -> PolicyRunner:
        from mtpsim.vllm_runner.runner import served_runner

        return served_runner(self, out, trace, bench_client, smoke, weights)

    def serve(self, exp: Experiment, policy: str, port: int, run: Any,
              plugin_dir: Path) -> tuple[list[str], dict[str, str]]:
        self.refuse(exp, [policy])
        return sglang_serve_argv(exp, policy, port), dict(exp.vllm.env)

    def scrape(self, exp: Experiment, policy: str, base_url: str, result: Result) -> None:
        """SGLang's acceptance gauges into `result.extra.engine_gauges`; no count verdict."""
        import urllib.request

        with urllib.request.urlopen(base_url + "/metrics", timeout=10) as r:
            gauges = read_gauges(r.read().decode("utf-8", "replace"))
        result.extra.engine_gauges = {
            **gauges, "note": "SGLang's recent averages, not totals over this run"}
        result.extra.sharing_engaged = (
            "sharing engaged: unknown (SGLang exposes no indexer calls per draft step; "
            f"index_share_for_mtp_iteration was set to {str(SHARING[policy]).lower()})")

    def collect(self, exp: Experiment, policy: str, plugin_dir: Path, result: Result,
                trace: Trace, traced: bool) -> Trace:
        return trace  # no plugin inside SGLang: no per-step records
