"""Trace-driven calibration: fit acceptance, top-k overlap and step cost to real-mode traces,
save the fit as a versioned JSON file an experiment can name (`[calibration] file`), and give
the simulator models built from it.

    cal = fit_traces([read_trace(p) for p in paths], sources=paths)   # mtpsim.calibration.fit
    cal.write("cal.json"); cal = read_calibration("cal.json")          # mtpsim.calibration.schema
    FittedAcceptance(cal, policy, k, topk), FittedCost(cal, policy, k, topk)  # mtpsim.models
"""

from mtpsim.calibration.schema import FORMAT, VERSION, Calibration, read_calibration

__all__ = ["FORMAT", "VERSION", "Calibration", "read_calibration"]
