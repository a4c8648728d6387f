"""Run in a fresh interpreter by test_smoke_model_is_accepted_by_vllm.py: vLLM modules bind
`current_platform` at import time, so the CPU platform must be in place before any of them is
imported. Prints what vLLM made of the smoke run's command line and model, as JSON."""

from __future__ import annotations

import copy
import json
import socket
import sys
from pathlib import Path

import vllm.platforms
from vllm.platforms.cpu import CpuPlatform

vllm.platforms._current_platform = CpuPlatform()
# vLLM refuses sparse attention on the CPU; XPU's sparse MLA backend is the generic route.
CpuPlatform.get_attn_backend_cls = classmethod(
    lambda cls, *a, **k: "vllm.v1.attention.backends.mla.xpu_mla_sparse.XPUMLASparseBackend")

import torch  # noqa: E402
from vllm.compilation.wrapper import TorchCompileWithNoGuardsWrapper  # noqa: E402
from vllm.engine.arg_utils import EngineArgs  # noqa: E402
from vllm.transformers_utils.config import _CONFIG_REGISTRY  # noqa: E402

from mtpsim.spec import load_experiment  # noqa: E402
from mtpsim.vllm_plugin.compiled import hooks_traced  # noqa: E402
from mtpsim.vllm_runner import smoke  # noqa: E402
from mtpsim.vllm_runner.argv import VLLM_CLI, vllm_serve_argv  # noqa: E402
from mtpsim.vllm_runner.owned_flags import serve_parser  # noqa: E402


def sparse_layers(model: torch.nn.Module) -> int:
    return sum(1 for m in model.modules() if hasattr(m, "skip_topk")
               and isinstance(getattr(m, "indexer", None), torch.nn.Module))


def fresh_layers(cfg):
    out = copy.copy(cfg)
    cc = copy.copy(cfg.compilation_config)
    cc.static_forward_context = {}
    object.__setattr__(out, "compilation_config", cc)
    return out


def main(folder: Path) -> dict:
    smoke.prepare_model(folder)
    exp = load_experiment("experiments/pr47352.toml", smoke.overrides(folder))
    argv = vllm_serve_argv(exp, "share", 8000, trace=True, smoke=True)
    args = serve_parser().parse_args(argv[len(VLLM_CLI) + 1:])
    args.model = args.model_tag  # as `vllm serve` does before building the engine
    cfg = EngineArgs.from_cli_args(args).create_engine_config()
    hf, spec = cfg.model_config.hf_config, cfg.speculative_config
    from vllm.tokenizers import cached_tokenizer_from_config

    tok = cached_tokenizer_from_config(cfg.model_config)
    out = {"argv": argv, "load_format": cfg.load_config.load_format,
           "tp": cfg.parallel_config.tensor_parallel_size,
           "max_model_len": cfg.model_config.max_model_len,
           "enforce_eager": cfg.model_config.enforce_eager,
           "spec": [spec.method, spec.num_speculative_tokens],
           "config_class_is_vllms": type(hf) is _CONFIG_REGISTRY["deepseek_v32"],
           "architectures": cfg.model_config.architectures,
           "draft_architectures": spec.draft_model_config.architectures,
           "hf": {k: getattr(hf, k) for k in ("index_topk", "index_n_heads", "index_head_dim",
                                               "kv_lora_rank", "qk_rope_head_dim",
                                               "num_nextn_predict_layers")},
           "vocab": cfg.model_config.get_vocab_size(),
           "tokens": tok.encode("DSA", add_special_tokens=False),
           "models": {}}
    from vllm.config import set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel
    from vllm.v1.worker.workspace import init_workspace_manager

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    draft_cfg = copy.copy(cfg)
    object.__setattr__(draft_cfg, "model_config", spec.draft_model_config)
    o3 = copy.copy(cfg.compilation_config)
    o3.mode = 3
    with set_current_vllm_config(cfg):
        init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                     distributed_init_method=f"tcp://127.0.0.1:{port}")
        initialize_model_parallel(1, 1)
        init_workspace_manager(torch.device("meta"))
        from vllm.model_executor.models.deepseek_mtp import DeepSeekMTP
        from vllm.model_executor.models.deepseek_v2 import DeepseekV3ForCausalLM
        from vllm.models.deepseek_v32.nvidia.model import DeepseekV32ForCausalLM
        from vllm.models.deepseek_v32.nvidia.mtp import DeepseekV32MTP

        for name, cls, c in (("cuda target", DeepseekV32ForCausalLM, cfg),
                             ("cuda mtp", DeepseekV32MTP, draft_cfg),
                             ("generic target", DeepseekV3ForCausalLM, cfg),
                             ("generic mtp", DeepSeekMTP, draft_cfg)):
            c = fresh_layers(c)  # layer names register per config: one registry per model
            with set_current_vllm_config(c), torch.device("meta"):
                m = cls(vllm_config=c, prefix="")
            inner = getattr(m, "model", None)
            out["models"][name] = {
                "meta": all(p.device.type == "meta" for p in m.parameters()),
                "params": sum(p.numel() for p in m.parameters()),
                "sparse_layers": sparse_layers(m),
                "share_hooks": hasattr(inner, "set_skip_topk")
                and hasattr(inner, "compact_topk_indices"),
                "traced_under_o3": hooks_traced(m, type("C", (), {"compilation_config": o3})),
                "support_torch_compile": any(isinstance(x, TorchCompileWithNoGuardsWrapper)
                                             for x in m.modules()),
            }
    return out


if __name__ == "__main__":
    print("SMOKE-PROBE " + json.dumps(main(Path(sys.argv[1]))))
