"""vLLM 0.33.0 (Model Runner V2) behind `vllm serve`, with the mtpsim plugin choosing the policy
at start-up and counting indexer calls per draft step (docs/real-mode.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtpsim.errors import UserError
from mtpsim.real.backend import Capabilities, ModelServer, PolicyRunner
from mtpsim.vllm_plugin.settings import VLLM_POLICIES

if TYPE_CHECKING:
    from mtpsim.result import Result
    from mtpsim.spec import Experiment
    from mtpsim.trace import Trace


class Vllm(ModelServer):
    name, flag = "vllm", "--engine vllm"
    caps = Capabilities(mode="vllm", served=True, policies=tuple(VLLM_POLICIES),
                        parallelism=("engine.tp", "engine.pp"), gpus=True,
                        extras=("vllm", "serve"), node_modules=("vllm", "mtpsim.vllm_runner.runner"),
                        trace_mode=True, smoke=True, bench_clients=("mtpsim", "vllm"),
                        vllm_plugin=True)

    def refuse(self, exp: Experiment, policies: tuple[str, ...] | list[str]) -> None:
        """Before any server starts, not after the policies vLLM can run have taken an hour."""
        if bad := [p for p in policies if p not in VLLM_POLICIES]:
            raise UserError(exp.source, "policies", f"expected only {', '.join(VLLM_POLICIES)} with "
                            f"--engine vllm ({', '.join(bad)} need model code vLLM 0.33.0 lacks; "
                            "run them with --engine reference, or pass -p fresh -p share)")
        if exp.engine.sampler != "kernels":
            raise UserError(exp.source, "engine.sampler", "expected 'kernels' with --engine vllm: "
                            "vLLM 0.33.0 samples with FlashInfer and Triton; 'sort' describes "
                            "vLLM <= 0.14 for the simulator only")
        if not exp.engine.sparse_topk_length:
            raise UserError(exp.source, "engine.sparse_topk_length", "expected true with --engine "
                            "vllm: vLLM 0.33.0 passes each row's top-k length to FlashMLA; false "
                            "describes vLLM before PR #36616 for the simulator only")
        if not exp.engine.dense_short_prefill:
            raise UserError(exp.source, "engine.dense_short_prefill", "expected true with "
                            "--engine vllm: vLLM 0.33.0 runs prompts within top-k as dense MHA; "
                            "false describes vLLM before PR #47327 for the simulator only")
        if exp.engine.indexer_clean_logits:
            raise UserError(exp.source, "engine.indexer_clean_logits", "expected false with "
                            "--engine vllm: vLLM 0.33.0 does not fill the indexer's logits; true "
                            "describes vLLM before PR #33568 for the simulator only")

    def runner(self, out: Path, trace: bool = False, bench_client: str = "mtpsim",
               smoke: bool = False, weights: str | None = None) -> PolicyRunner:
        from mtpsim.vllm_runner.runner import served_runner

        return served_runner(self, out, trace, bench_client, smoke, weights)

    def serve(self, exp: Experiment, policy: str, port: int, run: Any,
              plugin_dir: Path) -> tuple[list[str], dict[str, str]]:
        from mtpsim.vllm_runner.argv import vllm_serve_argv, vllm_serve_env

        try:
            argv = vllm_serve_argv(exp, policy, port, trace=run.trace, smoke=run.smoke)
        except ImportError:
            raise UserError(None, "--engine vllm", "vLLM is not importable here: install "
                            "vllm==0.33.0 on the GPU machine (docs/real-mode.md)") from None
        except ValueError as e:
            raise UserError(exp.source, "model.name", str(e)) from None
        return argv, vllm_serve_env(exp, policy, plugin_dir, run.trace)

    def scrape(self, exp: Experiment, policy: str, base_url: str, result: Result) -> None:
        """Nothing while it runs: the plugin writes its counts as vLLM's processes exit."""

    def collect(self, exp: Experiment, policy: str, plugin_dir: Path, result: Result,
                trace: Trace, traced: bool) -> Trace:
        """The plugin's per-draft-step indexer counts (files in `plugin_dir`) and, in trace
        mode, its per-step rows as the trace."""
        from mtpsim.vllm_runner.runner import _vllm_plugin_outputs

        return _vllm_plugin_outputs(exp, policy, plugin_dir, result, trace, traced)
