"""`mtpsim compare SIMDIR REALDIR` where the simulation is of other settings than the real run
(another experiment, or another --set) says so beside its error table: compare of pr47352's
simulation (DeepSeek-V3.2, 256 x 10,240-token prompts) and a reference-engine CPU run (32 x 768)
printed MAPE 3,439 % with no word that the two served different workloads. Like with like is
not flagged."""

from __future__ import annotations

import json

from _sweep_experiment import write_small
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.sim.simulator import simulate
from mtpsim.spec import load_experiment


def _write(exp, policy, path, mode):
    res = simulate(exp, policy)
    res.mode = mode
    res.write(path)
    return str(path)


def _unlike(real, sim):
    r = CliRunner().invoke(app, ["compare", real, sim, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)["fidelity"]["fresh"]["workload_mismatch"]


def test_a_simulation_of_other_settings_is_named(tmp_path):
    spec = str(write_small(tmp_path))
    real = _write(load_experiment(spec, []), "fresh", tmp_path / "real.json", "reference")
    other = _write(load_experiment(spec, ["workload.num_prompts=12", "workload.output_len=30"]),
                   "fresh", tmp_path / "other.json", "simulate")
    same = _write(load_experiment(spec, ["description=x"]), "fresh", tmp_path / "same.json",
                  "simulate")
    unlike = _unlike(real, other)
    assert unlike.startswith("the simulation is of other settings than the real run "
                             "(workload.num_prompts 10 real, 12 sim; workload.output_len 60 real, "
                             "30 sim)"), unlike
    assert _unlike(real, same) is None
