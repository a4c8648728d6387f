"""Uncertainty through the simulator: declared priors, quasi-random draws run for every policy
with common random numbers, a posterior from measured rows or bootstrapped calibration traces,
an extrapolation term, sensitivity, and `mtpsim advise` (docs/uncertainty.md)."""
