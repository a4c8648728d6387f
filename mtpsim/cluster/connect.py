"""Connect to a Ray cluster and check, before any work, that the sweep can run on it: the
address answers, some node is large enough for a point, and the engine imports on every node."""

from __future__ import annotations

import os
import socket
from typing import Any

from mtpsim.dataclass import dataclass
from mtpsim.errors import UserError

FLAG = "--cluster"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
PROBE_TIMEOUT_S = 180.0
# How long joining may take: a port that accepts TCP but is no Ray head (or a head too busy to
# answer) would otherwise keep ray.init retrying for many minutes.
INIT_TIMEOUT_ENV = "MTPSIM_RAY_INIT_TIMEOUT_S"
INIT_TIMEOUT_S = 120.0
# Modules a node must import to run a simulated point (a real engine's: its backend's
# Capabilities.node_modules).
ENGINE_MODULES: dict[str, tuple[str, ...]] = {"simulate": ("mtpsim.sim.simulator",)}


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserError(FLAG, None, "expected the ray package (pip install 'mtpsim[ray]')") from None
    return ray


def _host_port(address: str) -> tuple[str, int] | None:
    """`ray://HOST:PORT` or `HOST:PORT` -> (host, port); `auto` -> None."""
    if address == "auto":
        return None
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(FLAG, address, "expected auto, ray://HOST:PORT (Ray Client) or HOST:PORT "
                        "(the head's GCS address)")
    return host.strip("[]"), int(port)


# HTTP/2's client preface and an empty SETTINGS frame: a gRPC server (Ray's GCS and its Client
# server both are) answers with a SETTINGS frame (type 4) at once.
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def _reachable(address: str, timeout_s: float = 5.0, answer_s: float = 10.0) -> None:
    """The address accepts TCP and speaks gRPC: a port that accepts but never answers would
    otherwise leave ray.init retrying for many minutes."""
    hp = _host_port(address)
    if hp is None:
        return
    try:
        conn = socket.create_connection(hp, timeout=timeout_s)
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise UserError(FLAG, address, f"expected a reachable Ray cluster ({reason})") from None
    head = b""
    with conn:
        try:
            conn.settimeout(answer_s)
            conn.sendall(H2_PREFACE)
            while len(head) < 9 and (chunk := conn.recv(9 - len(head))):
                head += chunk
        except OSError:
            pass
    if len(head) < 9 or head[3] != 4:
        raise UserError(FLAG, address, "expected a Ray head's GCS port (HOST:PORT, e.g. 6379) or "
                        "Ray Client port (ray://HOST:10001): it accepts connections but gave no "
                        f"gRPC answer in {answer_s:g} s")


@dataclass(frozen=True, slots=True)
class Node:
    node_id: str
    ip: str
    cpus: float
    gpus: float


def connect(address: str) -> list[Node]:
    """Join the cluster as a driver (no local Ray is started); its alive nodes."""
    timeout_s = init_timeout_s()
    _reachable(address)
    hp = _host_port(address)
    if hp is not None and hp[0] in LOOPBACK:
        # Ray swaps a loopback address for the machine's interface address unless told not to
        # (read when ray is imported): a cluster on 127.0.0.1 is reached on 127.0.0.1.
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    ray = import_ray()
    if ray.is_initialized():
        ray.shutdown()
    try:
        _init_within(ray, address, timeout_s)
    except (ConnectionError, RuntimeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UserError(FLAG, address, f"expected a running Ray cluster ({first})") from None
    return nodes()


def init_timeout_s() -> float:
    raw = os.environ.get(INIT_TIMEOUT_ENV, "")
    try:
        value = float(raw) if raw else INIT_TIMEOUT_S
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise UserError(INIT_TIMEOUT_ENV, None, f"expected a number of seconds > 0, got {raw!r}")
    return value


def _init_within(ray: Any, address: str, timeout_s: float) -> None:
    """ray.init, given `timeout_s` to join. It runs in a daemon thread, as Ray's retries sit in
    native calls that no signal interrupts; a join that never finishes is abandoned with the
    process. (In a thread, ray.init also leaves the sweep's own SIGTERM handler in place.)"""
    import logging
    import threading

    failed: list[BaseException] = []

    def join() -> None:
        try:
            ray.init(address=address, logging_level="warning", log_to_driver=False)
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            failed.append(e)

    worker_log = logging.getLogger("ray._private.worker")
    level = worker_log.level
    worker_log.setLevel(logging.ERROR)  # "SIGTERM handler is not set ...": on purpose, see above
    try:
        thread = threading.Thread(target=join, name="ray-init", daemon=True)
        thread.start()
        thread.join(timeout_s)
    finally:
        worker_log.setLevel(level)
    if thread.is_alive():
        raise UserError(FLAG, address, f"expected a Ray cluster that lets this driver join within "
                        f"{timeout_s:g} s (something answers there but is not a Ray head's GCS "
                        f"port, or the head is overloaded; {INIT_TIMEOUT_ENV} sets the wait)")
    if failed:
        raise failed[0]


def nodes() -> list[Node]:
    import ray

    return [Node(n["NodeID"], n["NodeManagerAddress"], float(n["Resources"].get("CPU", 0)),
                 float(n["Resources"].get("GPU", 0)))
            for n in ray.nodes() if n.get("Alive")]


def disconnect() -> None:
    import sys

    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()


def require_room(cluster: list[Node], gpus: float, cpus: float, what: str, source: str,
                 field: str) -> None:
    """Some alive node must hold one point's request, or Ray would queue it forever."""
    if not cluster:
        raise UserError(FLAG, None, "expected a cluster with alive nodes, found none")
    if not any(n.gpus >= gpus and n.cpus >= cpus for n in cluster):
        most_gpus = max(n.gpus for n in cluster)
        most_cpus = max(n.cpus for n in cluster)
        have = f"{most_gpus:g} GPUs" if gpus else f"{most_cpus:g} CPUs"
        raise UserError(source, field, f"expected a point that fits one node: {what} needs "
                        f"{gpus:g} GPUs and {cpus:g} CPUs, the largest node has {have}")


def probe_node(modules: tuple[str, ...], version: str) -> str | None:
    """Runs on a node: None if mtpsim (same version) and the engine's modules import there."""
    import importlib

    import mtpsim

    if mtpsim.__version__ != version:
        return f"mtpsim {mtpsim.__version__} is installed, the driver runs {version}"
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - any import failure means: not installed there
            first = (str(e).splitlines() or [""])[0]
            return f"cannot import {name} ({type(e).__name__}: {first})"
    return None


def require_engine(cluster: list[Node], engine: str, gpu_nodes_only: bool = False,
                   modules: tuple[str, ...] | None = None) -> None:
    """Import the engine (`modules`, default ENGINE_MODULES[engine]) on every node that could
    run a point (one probe task pinned to each)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    import mtpsim

    targets = [n for n in cluster if n.gpus > 0] if gpu_nodes_only else cluster
    probe = ray.remote(probe_node)
    refs = {probe.options(num_cpus=0, max_retries=0, scheduling_strategy=(
        NodeAffinitySchedulingStrategy(n.node_id, soft=False))).remote(
            modules or ENGINE_MODULES[engine], mtpsim.__version__): n for n in targets}
    ready, late = ray.wait(list(refs), num_returns=len(refs), timeout=PROBE_TIMEOUT_S)
    for ref in late:
        ray.cancel(ref, force=True)
    problems = [f"{refs[r].ip} ({refs[r].node_id[:8]}) did not answer in {PROBE_TIMEOUT_S:.0f} s"
                for r in late]
    gone = 0
    for ref in ready:
        try:
            why = ray.get(ref)
        except (ray.exceptions.TaskUnschedulableError, ray.exceptions.NodeDiedError):
            # Listed alive but gone: the control store marks a dead node a few seconds late.
            # Ray will not place a point there, so it is no reason to refuse the sweep.
            gone += 1
            continue
        except Exception as e:  # noqa: BLE001 - a node that cannot even run the probe
            why = f"the probe failed ({type(e).__name__})"
        if why:
            problems.append(f"{refs[ref].ip} ({refs[ref].node_id[:8]}): {why}")
    if not problems and gone == len(refs):
        raise UserError(FLAG, None, "expected a cluster with alive nodes, every node left it")
    if problems:
        more = f" (and {len(problems) - 1} more nodes)" if len(problems) > 1 else ""
        raise UserError(FLAG, f"--engine {engine}", f"expected the engine installed on every node: "
                        f"{problems[0]}{more}")
