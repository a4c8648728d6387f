"""Which `vllm serve` settings extra arguments would change, asked of vLLM's own parser.

A list of spellings cannot guard the flags the runner owns: argparse accepts any unambiguous
prefix (`--hos=0.0.0.0`), vLLM adds aliases (`-sc`), underscores (`--speculative_config`),
dotted JSON keys (`--speculative-config.method=x`) and `--config FILE`. So the extra arguments
are parsed by the `vllm serve` parser of the installed vLLM into a namespace whose owned
destinations hold a sentinel: whatever is no longer the sentinel was set by them.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mtpsim.errors import SpecError

# argparse destination -> how to set it instead. argparse keeps the last value: an extra
# `--host 0.0.0.0` would open the unauthenticated server to the network, `--port` would hide it
# from the health check and `--speculative-config` would override the policy.
RUNNER_OWNED: dict[str, str] = {"host": "always 127.0.0.1", "port": "set vllm.port instead",
                                "speculative_config": "from the policy and speculative.*",
                                "pipeline_parallel_size": "set engine.pp instead",
                                "data_parallel_size": "set engine.dp instead",
                                "enable_expert_parallel": "set engine.ep instead",
                                "distributed_executor_backend":
                                    "set vllm.distributed_executor_backend instead"}
_UNSET = object()


class _ParseError(Exception):
    pass


@contextlib.contextmanager
def _some_platform() -> Iterator[None]:
    """vLLM computes argument defaults from the current platform and fails without a device:
    build the parser as on vLLM's CPU platform there (only destinations are read, not
    defaults)."""
    import vllm.platforms

    if not vllm.platforms.current_platform.is_unspecified():
        yield
        return
    from vllm.platforms.cpu import CpuPlatform

    saved = vllm.platforms._current_platform
    vllm.platforms._current_platform = CpuPlatform()
    try:
        yield
    finally:
        vllm.platforms._current_platform = saved


@functools.cache
def serve_parser() -> argparse.ArgumentParser:
    """The installed vLLM's `vllm serve` sub-parser (built once per process)."""
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    with _some_platform():
        top = FlexibleArgumentParser()
        parser: argparse.ArgumentParser = ServeSubcommand().subparser_init(
            top.add_subparsers(dest="subcommand"))
    return parser


def aliases(dest: str) -> list[str]:
    """Every option string vLLM's serve parser declares for `dest` (e.g. `-sc`)."""
    return [s for a in serve_parser()._actions if a.dest == dest for s in a.option_strings]


def settings_changed(extra_args: Sequence[str], dests: Sequence[str]) -> dict[str, Any]:
    """dest -> value for each of `dests` that `extra_args` set, as `vllm serve` would parse
    them after a model name. Raises ValueError with vLLM's message if it rejects them."""
    parser = serve_parser()
    ns = argparse.Namespace(**dict.fromkeys(dests, _UNSET))

    def fail(message: str) -> None:
        raise _ParseError(message)

    saved = parser.error
    parser.error = fail  # type: ignore[method-assign]
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            parser.parse_args(["model", *extra_args], namespace=ns)
    except _ParseError as e:
        raise ValueError(str(e)) from None
    except SystemExit:  # --help and the like print and exit
        raise ValueError("an argument that prints and exits (--help?)") from None
    except (OSError, ValueError, TypeError, KeyError) as e:  # --config FILE unreadable / bad
        raise ValueError(f"{type(e).__name__}: {e}") from None
    finally:
        parser.error = saved  # type: ignore[method-assign]
    return {d: getattr(ns, d) for d in dests if getattr(ns, d) is not _UNSET}


def check_extra_args(extra_args: Sequence[str], source: str | Path | None,
                     owned: Mapping[str, str] = RUNNER_OWNED) -> None:
    """SpecError naming `vllm.extra_args` if vLLM's parser rejects them or they set a setting
    the runner owns (whatever the spelling)."""
    if not extra_args:
        return
    try:
        changed = settings_changed(extra_args, list(owned))
    except ValueError as e:
        raise SpecError(source, "vllm.extra_args", f"expected arguments `vllm serve` accepts; its "
                        f"parser says: {e}") from None
    for dest, value in changed.items():
        flags = "/".join(aliases(dest)) or dest
        raise SpecError(source, "vllm.extra_args", f"expected no argument that sets {flags} "
                        f"(it set {value!r}); the runner sets it ({owned[dest]})")
