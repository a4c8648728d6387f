"""The simulator: acceptance and overlap models, the roofline step-cost model, a bulk-advancing
serving simulation and the calibration of the cost model (docs/simulator.md)."""

from mtpsim.sim.simulator import simulate

__all__ = ["simulate"]
