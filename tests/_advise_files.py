"""The deployment file the advise tests share: DeepSeek-V3.2 (NVFP4) on 4 x B200 with short
answers, one 1,024-token context at concurrency 2 unless a test says otherwise. `advise` is the
body of its [advise] table; `rest` follows it (an [uncertainty] table). Placeholders in braces stay
for a test's own `.format`."""


def deployment(advise: str, *, contexts: str = "[1024]", weights: str | None = None,
               concurrency: str = "[2]", output_len: int = 32, description: str = "",
               rest: str = "") -> str:
    lines = [f'description = "{description}"'] if description else []
    lines += ["[deployment]", 'model = "deepseek-v3.2"', 'gpu = "b200"', "tp = 4",
              'quantization = "nvfp4"', "[workload]", f"context_lengths = {contexts}"]
    if weights is not None:
        lines.append(f"context_weights = {weights}")
    lines += [f"concurrency = {concurrency}", f"output_len = {output_len}", "[advise]", advise.strip()]
    return "\n" + "\n".join(lines) + "\n" + rest


def known_advice(dep_path, share_gain, param: str = "critical_entries", every_k: bool = False):
    """An Advice over 16 made-up draws, no simulation: fresh k = 2 beats fresh k = 1 by 5 %; share
    gains `share_gain(u)` % over fresh at k = 2 (and at k = 1 with `every_k`, else it runs 0.1 %
    below fresh there), u the draw's quantile of the prior `param`."""
    import numpy as np

    from mtpsim.uncertainty.advise import Advice, load_deployment
    from mtpsim.uncertainty.draws import Z_NAMES, Draw

    dep = load_deployment(dep_path)
    n = 16
    us = (np.arange(n) + 0.5) / n
    draws = [Draw(i, i, {}, {param: float(u)}, dict.fromkeys(Z_NAMES, 0.0))
             for i, u in enumerate(us)]
    values = {}
    for k, base in ((1, 1000.0), (2, 1050.0)):
        share = np.array([base * (1 + share_gain(u) / 100) if k == 2 or every_k else base * 0.999
                          for u in us])[:, None]
        fresh = np.full((n, 1), base)
        values[(k, 1024, 2)] = {"fresh": {"output_throughput": fresh, "median_tpot_ms": 8e3 / fresh},
                                "share": {"output_throughput": share, "median_tpot_ms": 8e3 / share}}
    return Advice(dep, list(values), [], values, {c: () for c in values}, draws, 1.0,
                  replicate=np.arange(n) % 4, stages=[n], cap=n)
