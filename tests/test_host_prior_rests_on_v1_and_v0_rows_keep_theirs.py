"""The per-request host prior (calibration.host_us_per_request) rests on vLLM V1's scheduler:
loguniform(5, 30) µs (docs/public-corpus.md, "Host work per request, re-grounded"), the spec's
default at its median; the corpus's V0-engine rows (vLLM 0.7.x, before V1 became the default in
0.8.0) keep the prior they had, which V1's figures do not speak for."""

import importlib.util
import math
from pathlib import Path

from mtpsim.spec import experiment_from_dict, load_experiment
from mtpsim.uncertainty.priors import PARAMS, parse_prior

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("public_corpus", ROOT / "benchmarks" / "public_corpus.py")
pc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pc)
ROWS = {r["id"]: r for r in pc.load()[0]}


def test_the_default_sits_at_the_v1_priors_median():
    prior = parse_prior(PARAMS["host_us_per_request"].default)
    assert (prior.kind, prior.a, prior.b) == ("loguniform", 5.0, 30.0)
    default = experiment_from_dict({}).calibration.host_us_per_request
    assert math.isclose(default, prior.ppf(0.5), rel_tol=0.03)


def test_v0_engine_rows_keep_the_old_prior_and_v1_rows_take_the_default():
    v0 = ROWS["dstack-r1-h200-vllm-tp8-random3200x3200-c128"]
    v1 = ROWS["gpustack-h200-vllm-tp8-nodeepgemm-sharegpt"]
    assert v0["engine_version"] in pc.V0_ENGINE_VERSIONS
    assert v1["engine_version"] not in pc.V0_ENGINE_VERSIONS
    exp0 = load_experiment(pc.EXPERIMENTS / f"{v0['id']}.toml")
    exp1 = load_experiment(pc.EXPERIMENTS / f"{v1['id']}.toml")
    assert not exp0.engine.async_scheduling and not exp1.engine.async_scheduling
    assert exp0.uncertainty.priors.get("host_us_per_request") == "loguniform(20, 80)"
    assert "host_us_per_request" not in exp1.uncertainty.priors
