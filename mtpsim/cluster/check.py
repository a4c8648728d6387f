"""Before a real sweep's first task: every point fits some node of the cluster, and the engine
imports on the nodes (one line naming the field otherwise, exit 2)."""

from __future__ import annotations

from collections.abc import Sequence

from mtpsim.cluster.connect import Node, require_engine, require_room
from mtpsim.errors import UserError
from mtpsim.real_sweep import RealPlan, point_resources
from mtpsim.sweep import Point, load_point


def check_real(experiment: str, points: Sequence[Point], plan: RealPlan,
               cluster: list[Node]) -> None:
    """Every point fits some node, and the engine imports on the nodes."""
    for p in points:
        exp = load_point(experiment, p.overrides)
        gpus, cpus, field = point_resources(exp, plan)
        what = f"the point {_label(p)}"
        if plan.backend.caps.gpus and exp.vllm.distributed_executor_backend == "ray":
            total = sum(n.gpus for n in cluster)
            need = exp.engine.dp * exp.engine.tp * exp.engine.pp
            if total < need:
                raise UserError(exp.source, "engine.tp", f"expected at most {total:g} GPUs in all "
                                f"(the cluster's), {what} needs dp x tp x pp = {need}")
            continue
        require_room(cluster, gpus, cpus, what, exp.source, field)
    caps = plan.backend.caps
    require_engine(cluster, plan.engine, gpu_nodes_only=caps.gpus, modules=caps.node_modules)


def _label(p: Point) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.values.items()) or "(the experiment)"
