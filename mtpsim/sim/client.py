"""The simulator's benchmark client is mtpsim.arrivals.Client (vLLM bench's schedule and slot
rule, shared with the reference runner); re-exported for existing imports."""

from mtpsim.arrivals import Client

__all__ = ["Client"]
