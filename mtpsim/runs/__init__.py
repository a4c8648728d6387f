"""Orchestration below the commands: the executor that runs batches of independent jobs, and
the runs the commands call (a command parses, calls one of these, and reports)."""
