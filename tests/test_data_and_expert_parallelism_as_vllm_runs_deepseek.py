"""engine.dp (attention data parallelism) and engine.ep (expert parallelism) as vLLM 0.33.0
runs DeepSeek: weights per GPU, the communication each implies in the step cost, DP ranks that
each take a share of the requests, the imbalance prior drawn only under EP, the same settings
passed to `vllm serve`, and bad combinations refused in one line."""

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.models.cost import StepShape
from mtpsim.models.roofline import CostModel
from mtpsim.sim.simulator import Simulator, simulate
from mtpsim.spec import experiment_from_dict
from mtpsim.uncertainty.draws import drawn_priors

BASE = {"model": {"preset": "deepseek-v3.2"}, "hardware": {"preset": "h200"},
        "speculative": {"num_speculative_tokens": 1}, "seed": 3,
        "workload": {"num_prompts": 64, "input_len": 500, "output_len": 60}}


def _exp(**engine):
    return experiment_from_dict({**BASE, "engine": {"max_num_seqs": 256, **engine}})


def _step(tokens: int) -> StepShape:
    return StepShape(num_decode=tokens, decode_ctx=tokens * 600.0, decode_keys=tokens * 600.0,
                     num_draft=tokens, draft_ctx=tokens * 600.0, draft_keys=tokens * 600.0)


def test_dp8_replicates_attention_and_splits_experts_over_all_gpus():
    tp8, dp8 = CostModel(_exp(tp=8), "fresh"), CostModel(_exp(tp=1, dp=8, ep=True), "fresh")
    one = CostModel(_exp(tp=1), "fresh")
    # experts over 8 GPUs either way; attention whole on every DP rank
    assert tp8.weight_bytes_per_gpu() < dp8.weight_bytes_per_gpu() < one.weight_bytes_per_gpu()
    assert CostModel(_exp(tp=1, dp=8), "fresh").weight_bytes_per_gpu() == dp8.weight_bytes_per_gpu()


def test_ep_all_to_all_and_imbalance_cost_time_that_uniform_routing_does_not():
    ep = _exp(tp=1, dp=8, ep=True)
    uniform = experiment_from_dict({**BASE, "engine": {"tp": 1, "dp": 8, "ep": True},
                                    "calibration": {"moe_imbalance": 1.0}})
    s = _step(128)
    t_ep = CostModel(ep, "fresh").step(s)["verify"]
    t_uniform = CostModel(uniform, "fresh").step(s)["verify"]
    assert t_ep > t_uniform
    # dispatch/combine grow with the tokens; TP alone has no all-to-all
    small, big = (CostModel(ep, "fresh")._moe_comm(58, x) for x in (8.0, 512.0))
    assert big > small > 0 and CostModel(_exp(tp=8), "fresh")._moe_comm(58, 512.0) == 0.0


def test_dp_pads_the_moe_batch_to_all_ranks():
    # the simulated rank's MoE runs on dp x its tokens: more ranks, more expert work per step
    m1 = CostModel(_exp(tp=1, dp=2, ep=True), "fresh")._routed(64.0)
    m8 = CostModel(_exp(tp=1, dp=8, ep=True), "fresh")._routed(64.0)
    assert m8[1] == pytest.approx(m1[1])  # token-expert pairs per GPU: 8x tokens over 4x GPUs x 1/4
    assert m8[0] < m1[0]  # but each GPU reads fewer experts


def test_each_dp_rank_takes_a_share_of_the_requests_and_the_totals_are_the_deployments():
    exp = _exp(tp=1, dp=8, ep=True)
    sim = Simulator(exp, "fresh")
    assert len(sim.reqs) == 8 and sim.frontend.limit == 8  # 64 requests, all in flight, 8 ranks
    res = sim.run()
    assert res.metrics["completed"] == 64
    assert res.metrics["total_output_tokens"] == 64 * 60
    assert res.metrics["output_throughput"] == pytest.approx(64 * 60 / res.metrics["duration"],
                                                             rel=1e-9)
    conc = experiment_from_dict({**BASE, "engine": {"tp": 1, "dp": 8, "ep": True},
                                 "workload": {**BASE["workload"], "max_concurrency": 20}})
    assert Simulator(conc, "fresh").frontend.limit == 3  # ceil(20 / 8): the busiest rank


def test_dp1_is_unchanged_by_the_parallelism_terms():
    a = simulate(_exp(tp=8), "fresh")
    b = simulate(experiment_from_dict({**BASE, "engine": {"max_num_seqs": 256, "tp": 8, "dp": 1,
                                                          "ep": False, "num_gpus": 8}}), "fresh")
    assert a.metrics == b.metrics


def test_the_imbalance_prior_is_drawn_only_under_ep():
    assert "moe_imbalance" in drawn_priors(_exp(tp=1, dp=8, ep=True))
    assert "moe_imbalance" not in drawn_priors(_exp(tp=8))


@pytest.mark.parametrize(("sets", "field", "needle"), [
    (["engine.dp=3", "engine.tp=2", "engine.num_gpus=8"], "engine.num_gpus",
     "expected engine.dp x engine.tp x engine.pp = 6 GPUs"),
    (["engine.ep=true"], "engine.ep", "expected dp x tp > 1 with expert parallelism"),
    (["engine.dp=0"], "engine.dp", "expected"),
])
def test_bad_parallelism_is_one_line_exit_2(tmp_path, sets, field, needle):
    p = tmp_path / "e.toml"
    p.write_text('[hardware]\npreset = "h200"\n[engine]\ntp = 1\n')
    args = ["simulate", str(p)]
    for s in sets:
        args += ["--set", s]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert field in res.output and needle in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


def test_vllm_serve_gets_the_same_parallelism():
    pytest.importorskip("vllm.entrypoints.cli.serve")
    import vllm.platforms
    from vllm.engine.arg_utils import EngineArgs
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.platforms.cpu import CpuPlatform
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    from mtpsim.vllm_runner.argv import VLLM_CLI, vllm_serve_argv

    exp = experiment_from_dict({**BASE, "model": {"preset": "deepseek-v3.2",
                                                  "name": "deepseek-ai/DeepSeek-V3.2"},
                                "engine": {"tp": 2, "dp": 4, "ep": True}})
    argv = vllm_serve_argv(exp, "fresh", 12345)
    saved = vllm.platforms._current_platform
    vllm.platforms._current_platform = CpuPlatform()
    try:
        parser = FlexibleArgumentParser()
        ServeSubcommand().subparser_init(parser.add_subparsers(dest="subcommand"))
        ea = EngineArgs.from_cli_args(parser.parse_args(argv[len(VLLM_CLI):]))
    finally:
        vllm.platforms._current_platform = saved
    assert (ea.tensor_parallel_size, ea.data_parallel_size, ea.enable_expert_parallel) == (2, 4, True)
    plain = vllm_serve_argv(_exp_named(), "fresh", 1)
    assert "--data-parallel-size" not in plain and "--enable-expert-parallel" not in plain


def _exp_named():
    return experiment_from_dict({**BASE, "model": {"preset": "deepseek-v3.2",
                                                   "name": "deepseek-ai/DeepSeek-V3.2"},
                                 "engine": {"tp": 8}})


def test_extra_args_cannot_set_dp_or_ep():
    pytest.importorskip("vllm.entrypoints.cli.serve")
    from mtpsim.errors import SpecError
    from mtpsim.vllm_runner.argv import vllm_serve_argv

    for extra in (["--data-parallel-size", "2"], ["--enable-expert-parallel"]):
        exp = experiment_from_dict({**BASE, "model": {"preset": "deepseek-v3.2",
                                                      "name": "deepseek-ai/DeepSeek-V3.2"},
                                    "engine": {"tp": 8}, "vllm": {"extra_args": extra}})
        with pytest.raises(SpecError, match="engine.dp|engine.ep"):
            vllm_serve_argv(exp, "fresh", 1)


def test_pipeline_stages_split_the_layers_weights_and_kv_cache():
    from mtpsim.errors import SpecError
    from mtpsim.models.memory import check_fits, kv_cache_size

    bf16 = {**BASE, "model": {"preset": "deepseek-v3.2", "quantization": "bf16"}}
    with pytest.raises(SpecError, match="engine.tp: expected enough GPUs"):
        check_fits(experiment_from_dict({**bf16, "engine": {"tp": 8}}))
    two = experiment_from_dict({**bf16, "engine": {"tp": 8, "pp": 2, "num_gpus": 16}})
    check_fits(two)  # 16 GPUs hold what 8 cannot
    one, staged = CostModel(_exp(tp=8), "fresh"), CostModel(_exp(tp=8, pp=2), "fresh")
    assert staged.kv_bytes_per_token() == pytest.approx(one.kv_bytes_per_token() / 2)
    assert staged.weight_bytes_per_gpu() < 0.6 * one.weight_bytes_per_gpu()
    assert kv_cache_size(_exp(tp=8, pp=2)).tokens > 2 * kv_cache_size(_exp(tp=8)).tokens


def test_moe_dispatch_all_gathers_every_ranks_tokens_whatever_the_routing():
    """vLLM's default all2all_backend (allgather_reducescatter): each GPU receives (dp - 1) x
    the tokens of every other rank (fp8 + block scales + top-k weights and ids) and
    reduce-scatters dp x tokens bf16 outputs; no imbalance term, the same with or without EP."""
    def comm(dp: int, tokens: float = 256.0, **cal) -> float:
        exp = experiment_from_dict({**BASE, "engine": {"tp": 1, "dp": dp, "ep": dp > 1},
                                    "calibration": cal})
        cm = CostModel(exp, "fresh")
        lat = 2 * exp.hardware.allreduce_latency_us * 1e-6
        return cm._moe_comm(1, tokens) - lat, exp

    two, exp = comm(2)
    eight, _ = comm(8)
    assert eight == pytest.approx(7 * two)  # dp - 1 other ranks' tokens
    h = exp.model.hidden_size
    per_token = h * (1 + 4 / 128) + exp.model.num_experts_per_tok * 8 + 2 * h
    assert two == pytest.approx(256 * per_token / (exp.hardware.group_gbps(2) * 1e9
                                                   * exp.calibration.comm_efficiency))
    assert comm(8, moe_imbalance=1.8)[0] == pytest.approx(eight)
    no_ep = CostModel(_exp(tp=1, dp=8), "fresh")._moe_comm(1, 256.0)
    assert no_ep == pytest.approx(CostModel(_exp(tp=1, dp=8, ep=True), "fresh")._moe_comm(1, 256.0))
    assert CostModel(_exp(tp=8), "fresh")._moe_comm(58, 256.0) == 0.0


def test_more_pipeline_stages_than_layers_is_refused():
    """engine.pp = 100 on a 61-layer model ran as '100 x H200 (TP1 x PP100)' with the figures of
    pp = 61: stages without a layer are no deployment."""
    from mtpsim.errors import SpecError
    from mtpsim.spec import load_experiment

    with pytest.raises(SpecError, match=r"engine.pp: expected at most one stage per decoder layer \(61"):
        load_experiment("experiments/pr47352.toml", ["engine.pp=100", "engine.tp=1"])
    assert load_experiment("experiments/pr47352.toml", ["engine.pp=61", "engine.tp=1"]).engine.pp == 61
