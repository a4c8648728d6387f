"""workload.max_total_len: lengths drawn as `vllm bench serve` samples a dataset (is_valid_sequence:
both >= 4 tokens, prompt <= max_total / 2, prompt + output <= max_total), with the kept pairs'
means equal to the workload's (what a source reports); a filter the means cannot fit is refused."""

import numpy as np
import pytest

from mtpsim.errors import SpecError
from mtpsim.sim.entities import draw_filtered
from mtpsim.sim.simulator import Simulator
from mtpsim.spec import experiment_from_dict


def test_kept_pairs_obey_the_filter_and_keep_the_means():
    ins, outs = draw_filtered(np.random.default_rng(0), 1000, (219, 197), (1.0, 1.0), 2048)
    assert ins.mean() == pytest.approx(219, rel=0.01) and outs.mean() == pytest.approx(197, rel=0.01)
    assert ins.min() >= 4 and outs.min() >= 4 and ins.max() <= 1024 and (ins + outs).max() <= 2048


def test_the_filter_cuts_the_tail_an_unfiltered_lognormal_has():
    w = {"num_prompts": 1000, "input_len": 219, "output_len": 197, "input_len_distribution": "lognormal",
         "input_len_spread": 1.0, "output_len_distribution": "lognormal", "output_len_spread": 1.0}
    spec = {"model": {"quantization": "nvfp4"}, "engine": {"tp": 4}}
    free = Simulator(experiment_from_dict({**spec, "workload": w}), "fresh").reqs
    cut = Simulator(experiment_from_dict({**spec, "workload": {**w, "max_total_len": 2048}}), "fresh").reqs
    assert (free.input_len + free.output_len).max() > 2048 >= (cut.input_len + cut.output_len).max()


@pytest.mark.parametrize("workload", [
    {"max_total_len": 2048},  # fixed lengths
    {"max_total_len": 300, "input_len": 200, "output_len": 50, "input_len_distribution": "lognormal",
     "output_len_distribution": "lognormal"},  # mean prompt over half the filter
])
def test_a_filter_the_lengths_cannot_meet_is_refused(workload):
    with pytest.raises(SpecError, match="workload.max_total_len"):
        experiment_from_dict({"workload": workload})
