"""The reference engine (mtpsim.engine): in this process, or behind `mtpsim serve-reference`
measured over HTTP exactly as a vLLM server is."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtpsim.errors import UserError
from mtpsim.real.backend import Capabilities, PolicyRunner

if TYPE_CHECKING:
    from mtpsim.client.workload import BenchRequest
    from mtpsim.result import Result
    from mtpsim.spec import Experiment
    from mtpsim.trace import Trace

_MODULES = ("mtpsim.engine.runner", "mtpsim.vllm_runner.runner")


# The model preset that describes the reference engine's model (what `simulate` prices for
# engine.scheduler = "reference"); the families it stands in for say so (Family.reference_stand_in).
PRESET = "reference"


def _set_by_flag(exp: Experiment, keys: tuple[str, ...]) -> bool:
    return any(o.partition("=")[0].strip() in keys for o in exp.overrides)


def refuse_model(exp: Experiment) -> None:
    """The reference engine runs its own small model, whatever the spec's model section says: a
    scaled-down stand-in for a DSA model (indexer, top-k, MTP), none for a model of another
    family (dense MLA has no indexer or top-k row to reuse; a hybrid has linear-attention
    layers). One line, naming where the family came from, before anything runs."""
    from mtpsim.models.families import FAMILIES, family_of

    m = exp.model
    if family_of(m).reference_stand_in:
        return
    ok = ", ".join(repr(n) for n, f in FAMILIES.items() if f.reference_stand_in)
    where = "--set" if _set_by_flag(exp, ("model", "model.family", "model.preset")) else exp.source
    preset = f" (model.preset {m.preset!r})" if m.preset else ""
    raise UserError(where, "model.family", f"expected {ok} with the reference engine, which runs "
                    f"its own small DSA + MTP model (reference.weights) as a stand-in for DSA models "
                    f"only, got {m.family!r}{preset}: simulate it (mtpsim simulate), or run the "
                    "model itself (--engine vllm)")


def refuse_workload(exp: Experiment) -> None:
    """The weights read, and the workload fits their positions (pr47352's 10K-token prompts do
    not): one line before the first policy loads the model, not after (the server's seeded
    random test model has no file to read: its server checks its own limits)."""
    from mtpsim.serve_reference.server import TINY_RANDOM

    if exp.reference.weights != TINY_RANDOM:
        from mtpsim.engine.runner import check_workload

        check_workload(exp)


def refuse_threads(exp: Experiment) -> None:
    """More torch threads than the cores this process may use: at 1,024 on 2 cores a 2-request
    run took 40x as long and its timings measured the oversubscription. One line, before any
    engine starts."""
    from mtpsim.runs.executor import default_workers

    cores, threads = default_workers(), exp.reference.threads
    if threads > cores:
        where = "--set" if _set_by_flag(exp, ("reference", "reference.threads")) else exp.source
        raise UserError(where, "reference.threads", f"expected at most the {cores} cores this "
                        f"process may use (0 = torch's default), got {threads}")


def stand_in_note(exp: Experiment) -> str | None:
    """A spec whose model preset is not the reference model's: what the figures are of."""
    if exp.model.preset == PRESET:
        return None
    named = exp.model.preset or exp.model.name or "the spec's model"
    return (f"note: the reference engine runs its own small DSA + MTP model (reference.weights = "
            f"{exp.reference.weights!r}), a scaled-down stand-in for model.preset {named!r}: its "
            f"figures are the small model's, not {named}'s (model.preset = {PRESET!r} describes it)")


class InProcessReference:
    name, flag = "reference", "--engine reference"
    caps = Capabilities(mode="reference", served=False, policies=None, parallelism=(),
                        gpus=False, extras=("reference",), node_modules=_MODULES, rounds=True,
                        probe=True, level=True, weights_by_content=True,
                        own_model="reference engine", note=stand_in_note)
    # (exp, policy, progress, requests=None, level=False) -> (Result, Trace); a "module:function" looked up
    # at each run
    target = "mtpsim.engine.runner:run_policy"

    def refuse(self, exp: Experiment, policies: tuple[str, ...] | list[str]) -> None:
        """The reference engine runs every policy mtpsim knows, but samples without top-p, and
        stands in only for a model of its own family."""
        refuse_top_p(exp)
        refuse_model(exp)
        refuse_threads(exp)
        refuse_workload(exp)

    def runner(self, out: Path, trace: bool = False, bench_client: str = "mtpsim",
               smoke: bool = False, weights: str | None = None) -> PolicyRunner:
        module, func = self.target.split(":")
        return getattr(importlib.import_module(module), func)


class ServedReference:
    name, flag = "reference", "--server"
    caps = Capabilities(mode="reference", served=True, policies=None, parallelism=(), gpus=False,
                        extras=("reference", "serve"), node_modules=_MODULES,
                        bench_clients=("mtpsim", "vllm"), weights_by_content=True,
                        own_model="reference engine", note=stand_in_note)

    def refuse(self, exp: Experiment, policies: tuple[str, ...] | list[str]) -> None:
        """The reference server runs every policy mtpsim knows, but samples without top-p, and
        stands in only for a model of its own family."""
        refuse_top_p(exp)
        refuse_model(exp)
        refuse_threads(exp)
        refuse_workload(exp)

    def runner(self, out: Path, trace: bool = False, bench_client: str = "mtpsim",
               smoke: bool = False, weights: str | None = None) -> PolicyRunner:
        from mtpsim.vllm_runner.runner import served_runner

        return served_runner(self, out, trace, bench_client, smoke, weights)

    def serve(self, exp: Experiment, policy: str, port: int, run: Any,
              plugin_dir: Path) -> tuple[list[str], dict[str, str]]:
        from mtpsim.vllm_runner.argv import reference_serve_argv

        # vLLM's client sends random prompts as text: bytes that are not UTF-8 come back as
        # 3-byte replacement characters, so the reference server needs room for longer prompts.
        room = (4 * exp.workload.input_len + exp.workload.output_len
                if run.bench_client == "vllm" else None)
        return reference_serve_argv(exp, policy, port, weights=run.weights, max_model_len=room), {}

    def requests(self, exp: Experiment) -> list[BenchRequest] | None:
        """The in-process run's prompts (held-out text) and per-request seeds."""
        from mtpsim.client.workload import BenchRequest
        from mtpsim.engine.runner import workload

        prompts, out_lens, _ = workload(exp)
        return [BenchRequest(int(n), prompt=list(p), input_len=len(p), seed=exp.seed * 1_000_003 + i)
                for i, (p, n) in enumerate(zip(prompts, out_lens, strict=True))]

    def client_api(self, exp: Experiment) -> tuple[str, str]:
        return "openai", "mtpsim-reference"

    def bench_tokenizer(self, folder: Path) -> Path | None:
        from mtpsim.serve_reference.tokenizer import write_byte_tokenizer

        return write_byte_tokenizer(folder / "tokenizer")

    def scrape(self, exp: Experiment, policy: str, base_url: str, result: Result) -> None:
        """The server's per-step indexer counts -> "sharing engaged: ..." (as vLLM's plugin),
        for policies whose step 0 runs the indexer (the counts have something to check)."""
        from mtpsim.policies import traits
        from mtpsim.vllm_runner.runner import _reference_verdict

        if traits(policy).runs_indexer(0):
            _reference_verdict(base_url, policy, result)

    def collect(self, exp: Experiment, policy: str, plugin_dir: Path, result: Result,
                trace: Trace, traced: bool) -> Trace:
        return trace  # per-step records need the in-process engine


def refuse_top_p(exp: Experiment) -> None:
    """The reference engine samples the whole temperature-scaled distribution (its server
    answers 400 to any other top_p): one line before anything starts."""
    if exp.workload.top_p < 1.0:
        raise UserError(exp.source, "workload.top_p", "expected 1 with the reference engine, which "
                        "samples without nucleus truncation (top-p needs --engine vllm)")

