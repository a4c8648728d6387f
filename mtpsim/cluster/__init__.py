"""Running sweep points on a Ray cluster: connect and check (`connect`), submit, gather and cancel
(`executor`), and the task bodies that run on the nodes (`tasks`). Ray is imported lazily: it is
the optional `ray` extra, and nothing outside `mtpsim sweep --cluster` needs it."""
