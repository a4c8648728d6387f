"""A Ray cluster for `mtpsim sweep --cluster`: joining it and checking that a sweep can run on it
(`connect`, `check`). The points run on it through the one executor's Ray backend
(mtpsim.runs.executor_ray). Ray is imported lazily: it is the optional `ray` extra."""
