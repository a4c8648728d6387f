"""The models a prediction rests on, each its parameters (a small dataclass) plus its equations:

- `overlap`: how much of the fresh top-k selection a policy's selection keeps;
- `acceptance`: per-position acceptance and the overlap -> acceptance link;
- `penalty`: the overlap -> acceptance link, one class per form (parameters, fit, JSON);
- `cost`: step cost from features fitted to phase timings; `roofline`: step cost from presets;
- `families`: what a model family's layers are and what each kind of layer costs, read by the
  roofline, the memory model, the fitted features and the reference engine.

The simulator prices with them, the fitters (mtpsim.calibration.fit) produce their parameters,
and samplers draw them. What a policy does comes from its declared traits (mtpsim.policies).
`build.models_for` picks the fitted form (a calibration) or the parametric one for a simulation.
"""
