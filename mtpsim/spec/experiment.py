"""Loading an experiment: TOML -> presets merged field by field -> `--set` overrides -> validated,
frozen `Experiment`. Precedence: `--set` > experiment file > preset > built-in default."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, field
from pathlib import Path
from typing import Any

from mtpsim.dataclass import dataclass
from mtpsim.errors import SpecError
from mtpsim.inputs import MAX_NESTING, MiB, check_nesting, read_text
from mtpsim.metrics import conditional_to_marginal, marginal_to_conditional
from mtpsim.models.families import FAMILIES, family_of
from mtpsim.models.families.base import DENSE_TOPK
from mtpsim.policies import NO_MTP, POLICIES, policies_where
from mtpsim.spec.fields import build_section
from mtpsim.spec.sections import (
    SCHEDULERS,
    AcceptanceSpec,
    CalibrationSpec,
    EngineSpec,
    HardwareSpec,
    ModelSpec,
    ReferenceSpec,
    SpeculativeSpec,
    UncertaintySpec,
    VllmSpec,
    WorkloadSpec,
)

PRESETS_DIR = Path(__file__).parent / "presets"
SECTIONS: dict[str, type] = {
    "model": ModelSpec,
    "hardware": HardwareSpec,
    "engine": EngineSpec,
    "speculative": SpeculativeSpec,
    "workload": WorkloadSpec,
    "acceptance": AcceptanceSpec,
    "calibration": CalibrationSpec,
    "reference": ReferenceSpec,
    "vllm": VllmSpec,
    "uncertainty": UncertaintySpec,
}
TOP_LEVEL = ("description", "seed", "policies")
PRESET_EXTRAS = ("uncertainty",)  # sections a model preset may give defaults for
OVERRIDE_SOURCE = "--set"
# The policies that reuse no top-k row: all a dense family (no indexer) can run
NO_REUSE_POLICIES = policies_where(lambda t: t.indexer == "every" and not t.later_rows)
MAX_SPEC_BYTES = 4 * MiB
# the roles of the TOP_LEVEL fields (mtpsim.spec.fields.ROLES)
_BOOKKEEPING, _LABEL = {"role": "bookkeeping"}, {"role": "label"}


@dataclass(frozen=True, slots=True)
class Experiment:
    """A validated experiment: every section, the policies to compare and the seed."""

    model: ModelSpec
    hardware: HardwareSpec
    engine: EngineSpec
    speculative: SpeculativeSpec
    workload: WorkloadSpec
    acceptance: AcceptanceSpec
    calibration: CalibrationSpec
    reference: ReferenceSpec
    vllm: VllmSpec
    uncertainty: UncertaintySpec
    policies: tuple[str, ...] = field(default=("fresh", "share"), metadata=_BOOKKEEPING)
    seed: int = field(default=0, metadata=_BOOKKEEPING)
    description: str = field(default="", metadata=_LABEL)
    source: str = "<memory>"
    overrides: tuple[str, ...] = field(default=())

    @property
    def k(self) -> int:
        return self.speculative.num_speculative_tokens

    @property
    def index_topk(self) -> int:
        """Keys each query's attention may select: DENSE_TOPK (every earlier key) for a dense
        family (DeepSeek-V3/R1's MLA), else `speculative.index_topk` or the model's."""
        if FAMILIES[self.model.family].dense_attention:
            return DENSE_TOPK
        return self.speculative.index_topk or self.model.index_topk

    def source_of(self, *fields: str) -> str:
        """Where these fields (`section.key`) were set, for an error found after loading:
        `--set` when a flag set one of them or its whole section, else the experiment file."""
        names = {*fields, *(f.partition(".")[0] for f in fields)}
        by_flag = any(o.partition("=")[0].strip() in names for o in self.overrides)
        return OVERRIDE_SOURCE if by_flag else self.source

    def marginal_rates(self) -> list[float]:
        """Sharing-off acceptance as vLLM reports it (marginal, the first k positions)."""
        a = self.acceptance
        rates = list(a.per_position)[:self.k]
        return rates if a.kind == "marginal" else conditional_to_marginal(rates)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe echo of the spec (inf written as the string "inf")."""
        return json_safe(asdict(self))


def json_safe(x: Any) -> Any:
    """x with every infinite float as the string "inf" / "-inf" (strict JSON would write null)."""
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_safe(v) for v in x]
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _refuse_json(text: str, path: Path, what: str) -> None:
    """A file that is not TOML but one of mtpsim's JSON outputs (a result, a trace's JSON
    Lines): say what it is and which command reads it, rather than blaming its line 1's TOML."""
    import json

    head = None
    for part in (text, text.lstrip().partition("\n")[0]):  # the whole file, or line 1
        try:
            head = json.loads(part)
            break
        except (ValueError, RecursionError):
            continue
    if not isinstance(head, dict | list):  # `1` or `"x"` alone: a TOML mistake, not JSON
        return
    kind = (head.get("schema") or head.get("format")) if isinstance(head, dict) else None
    got = {"mtpsim-result": "an mtpsim result (JSON), which mtpsim compare reads",
           "mtpsim-trace": "an mtpsim trace (JSON Lines), which simulate reads with --trace FILE"
           }.get(kind, "JSON")
    article = "an" if what[:1] in "aeiou" else "a"
    raise SpecError(path, None, f"expected {article} {what} (TOML), got {got}")


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """A TOML file read through the checked reader (regular file, size, nesting); one line on error."""
    text = read_text(path, SpecError, what, MAX_SPEC_BYTES)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        _refuse_json(text, path, what)
        raise SpecError(path, None, f"expected valid TOML ({e})") from None
    except RecursionError:
        raise SpecError(path, None, f"expected TOML nested at most {MAX_NESTING} deep") from None
    check_nesting(raw, path, SpecError, finite=False)
    return raw


def available_presets(kind: str) -> list[str]:
    return sorted(p.stem for p in (PRESETS_DIR / kind).glob("*.toml"))


def parse_override(text: str) -> tuple[list[str], Any]:
    """`section.key=value` -> (["section", "key"], value). The value is read as a TOML value
    (`3`, `1.5`, `true`, `inf`, `["a", "b"]`); anything else is taken as a plain string."""
    key, sep, value = text.partition("=")
    path = [p.strip() for p in key.strip().split(".")]
    if not sep or not all(path):
        raise SpecError(OVERRIDE_SOURCE, text or None, "expected section.key=value")
    try:
        parsed = tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value.strip()
    except RecursionError:
        raise SpecError(OVERRIDE_SOURCE, key.strip(), f"expected a value nested at most "
                        f"{MAX_NESTING} deep") from None
    check_nesting(parsed, OVERRIDE_SOURCE, SpecError, key.strip(), finite=False)
    return path, parsed


def load_experiment(path: str | Path, overrides: Sequence[str] = ()) -> Experiment:
    """Read, merge and validate an experiment; any problem is a SpecError naming file and key."""
    path = Path(path)
    raw = read_toml(path, "experiment file")
    if not raw and not overrides:  # all defaults would fail on a confusing later field
        raise SpecError(path, None, "expected an experiment (sections "
                        f"{', '.join(SECTIONS)}), got a file that sets nothing; experiments/pr47352.toml "
                        "is an example")
    return experiment_from_dict(raw, source=str(path), overrides=overrides)


def _default_preset(section: str, raw: Mapping[str, Any]) -> str:
    """The model preset of the experiment's scheduler where it has one (engine.scheduler =
    "reference": mtpsim's reference model), else the section's default."""
    engine = raw.get("engine")
    scheduler = engine.get("scheduler") if isinstance(engine, dict) else None
    rule = SCHEDULERS.get(scheduler) if isinstance(scheduler, str) else None
    if section == "model" and rule is not None and rule.model_preset is not None:
        return rule.model_preset
    return (ModelSpec if section == "model" else HardwareSpec)().preset


def experiment_from_dict(raw: Mapping[str, Any], source: str = "<memory>",
                         overrides: Sequence[str] = ()) -> Experiment:
    """Validate an experiment given as nested dicts (as TOML would load it)."""
    raw = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in raw.items()}
    overridden = _apply_overrides(raw, overrides)
    for key in raw:
        if key not in SECTIONS and key not in TOP_LEVEL:
            src = OVERRIDE_SOURCE if any(o[0] == key for o in overridden) else source
            if key == "deployment" and src == source:  # advise's file, handed to simulate
                raise SpecError(src, key, "a [deployment] table makes this a deployment file "
                                "for mtpsim advise; expected an experiment (sections "
                                f"{', '.join(SECTIONS)})")
            raise SpecError(src, key, "unknown section or key; expected one of "
                            f"{', '.join([*SECTIONS, *TOP_LEVEL])}")
    built = _build_sections(raw, source, overridden)
    exp = Experiment(**built, policies=_policies(raw, built, source, overridden),
                     seed=_top(raw, "seed", 0, int, source, overridden),
                     description=_top(raw, "description", "", str, source, overridden),
                     source=source, overrides=tuple(overrides))
    _check_across_sections(exp, source, overridden)
    return exp


Overridden = set[tuple[str, ...]]  # (section, key) or (key,) for each value a `--set` gave


def _apply_overrides(raw: dict[str, Any], overrides: Sequence[str]) -> Overridden:
    """Write each `--set section.key=value` into `raw` (nested dicts, in place); returns what
    they set. A whole section as an inline table (`--set workload={num_prompts=8}`) sets its
    keys over the file's, key by key, as `--set workload.num_prompts=8` would: it does not drop
    the keys it does not name."""
    overridden: Overridden = set()
    for text in overrides:
        keys, value = parse_override(text)
        node: dict[str, Any] = raw
        for k in keys[:-1]:
            child = node.setdefault(k, {})
            if not isinstance(child, dict):
                raise SpecError(OVERRIDE_SOURCE, ".".join(keys), f"{k} is not a section")
            node = child
        if len(keys) == 1 and keys[0] in SECTIONS and isinstance(value, dict) \
                and isinstance(node.get(keys[0]), dict):
            value = {**node[keys[0]], **value}
        node[keys[-1]] = value
        overridden.add(tuple(keys[:2]))
    return overridden


def _source_of(source: str, overridden: Overridden, section: str, preset_file: Path | None,
               from_preset: set[str]) -> Callable[[str], str]:
    """Where each key of `section` came from, for its error: `--set`, the preset file or the
    experiment."""
    def find(key: str) -> str:
        if (section, key) in overridden or (section,) in overridden:
            return OVERRIDE_SOURCE
        if preset_file is not None and key in from_preset:
            return str(preset_file)
        return source
    return find


def _build_sections(raw: dict[str, Any], source: str, overridden: Overridden) -> dict[str, Any]:
    """Every section, validated: its table over its preset (model, hardware) and, for the
    sections a model preset gives defaults for, over those defaults."""
    built: dict[str, Any] = {}
    # a model preset may also carry [uncertainty] defaults for that model (the deepseek-v3.2
    # preset's priors); below the experiment file, priors merged key by key
    model_extras: dict[str, dict[str, Any]] = {}
    model_file: Path | None = None
    for section, cls in SECTIONS.items():
        table = raw.get(section, {})
        if not isinstance(table, dict):
            raise SpecError(OVERRIDE_SOURCE if (section,) in overridden else source, section,
                            "expected a table ([section])")
        preset_file, preset_keys = None, set()
        if section in model_extras and model_file is not None:
            extra = model_extras[section]
            if "priors" in extra and isinstance(table.get("priors"), dict):
                table = {**table, "priors": {**extra["priors"], **table["priors"]}}
            preset_file, preset_keys = model_file, {k for k in extra if k not in table}
            table = {**extra, **table}
        if section in ("model", "hardware") and (
                found := _read_preset(section, table, raw, source, overridden)) is not None:
            name, preset_file, preset = found
            if section == "model":
                model_file = preset_file
                for extra_section in PRESET_EXTRAS:
                    if isinstance(preset.get(extra_section), dict):
                        model_extras[extra_section] = preset.pop(extra_section)
            preset_keys = set(preset) - set(table)
            table = {"preset": name, **preset, **table}
        built[section] = build_section(cls, table, section,
                                       _source_of(source, overridden, section, preset_file,
                                                  preset_keys))
    return built


def _read_preset(section: str, table: dict[str, Any], raw: Mapping[str, Any], source: str,
                 overridden: Overridden) -> tuple[str, Path, dict[str, Any]] | None:
    """The preset a model or hardware table names (or the default one): its name, file and
    keys; None for `preset = ""` (no preset)."""
    kind = "models" if section == "model" else "gpus"
    name = table.get("preset", _default_preset(section, raw))
    if not isinstance(name, str):
        raise SpecError(source, f"{section}.preset", f"expected a string, got {name!r}")
    if not name:
        return None
    if name not in available_presets(kind):
        raise SpecError(_source_of(source, overridden, section, None, set())("preset"),
                        f"{section}.preset", f"expected one of "
                        f"{', '.join(available_presets(kind))}, got {name!r}")
    preset_file = PRESETS_DIR / kind / f"{name}.toml"
    return name, preset_file, read_toml(preset_file, "preset")


def _top(raw: Mapping[str, Any], key: str, default: Any, tp: type, source: str,
         overridden: Overridden) -> Any:
    """A top-level value (seed, description), checked for its type."""
    v = raw.get(key, default)
    src = OVERRIDE_SOURCE if (key,) in overridden else source
    if tp is int and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
        raise SpecError(src, key, f"expected an integer >= 0, got {v!r}")
    if tp is str and not isinstance(v, str):
        raise SpecError(src, key, f"expected a string, got {v!r}")
    return v


def _policies(raw: Mapping[str, Any], built: dict[str, Any], source: str,
              overridden: Overridden) -> tuple[str, ...]:
    """The policies to compare (a list, or a comma-separated string); plain decoding (k = 0)
    has one. A dense family (no indexer) defaults to, and admits only, the policies that
    reuse no top-k row (`fresh`): the others would have nothing to reuse."""
    family = built["model"].family
    dense = FAMILIES[family].dense_attention
    policies = raw.get("policies", list(NO_REUSE_POLICIES) if dense else ["fresh", "share"])
    psrc = OVERRIDE_SOURCE if ("policies",) in overridden else source
    if isinstance(policies, str):  # "fresh,share", or a list whose quotes the shell took: [fresh,share]
        text = policies.strip()
        text = text[1:-1] if text.startswith("[") and text.endswith("]") else text
        policies = [p.strip().strip("'\"") for p in text.split(",")]
    if (not isinstance(policies, list) or not policies
            or any(p not in POLICIES for p in policies) or len(set(policies)) != len(policies)):
        raise SpecError(psrc, "policies", "expected a non-empty list of distinct policies from "
                        f"{', '.join(POLICIES)}, got {policies!r}")
    if dense and (reuse := [p for p in policies if p not in NO_REUSE_POLICIES]):
        raise SpecError(psrc, "policies", f"expected only {', '.join(NO_REUSE_POLICIES)} for "
                        f"model.family {family!r} (dense attention: no indexer, no top-k row to "
                        f"reuse), got {', '.join(reuse)}")
    if built["speculative"].num_speculative_tokens == 0:
        # plain decoding: no draft step, so the reuse policies are one and the same run
        policies = [NO_MTP]
    return tuple(policies)


MIN_DATASET_LEN = 4  # vllm bench serve's is_valid_sequence min_len, prompt and output alike
Src = Callable[[str, str], str]  # (section, key) -> where its value came from


def _check_across_sections(exp: Experiment, source: str, overridden: Overridden) -> None:
    """Impossible combinations that no single field can see (the first one found is raised)."""

    def src(section: str, key: str) -> str:
        return OVERRIDE_SOURCE if (section, key) in overridden else source

    _check_parallelism(exp, src)
    _check_dataset_filter(exp, src)
    _check_model(exp, src)
    _check_batching(exp, src)
    _check_arrival_span(exp, src)
    _check_acceptance(exp, src)
    _check_calibration(exp, src)


def _check_parallelism(exp: Experiment, src: Src) -> None:
    """GPU count against dp x tp x pp; expert parallelism needs more than one GPU per stage."""
    e = exp.engine
    if e.num_gpus and e.num_gpus != e.dp * e.tp * e.pp:
        raise SpecError(src("engine", "num_gpus"), "engine.num_gpus",
                        f"expected engine.dp x engine.tp x engine.pp = {e.dp * e.tp * e.pp} GPUs "
                        f"(dp x tp = {e.dp * e.tp} must divide them, one engine.pp stage each), "
                        f"got {e.num_gpus}")
    layers = exp.model.num_layers
    if layers and e.pp > layers:  # vLLM's get_pp_indices would leave stages without a layer
        raise SpecError(src("engine", "pp"), "engine.pp",
                        f"expected at most one stage per decoder layer ({layers} in "
                        f"{exp.model.name or 'the model'}), got {e.pp}")
    if e.ep and e.dp * e.tp == 1:
        raise SpecError(src("engine", "ep"), "engine.ep",
                        "expected dp x tp > 1 with expert parallelism (on one GPU every expert "
                        "is local: vLLM 0.33.0 turns EP off, fused_moe/config.py "
                        "FusedMoEParallelConfig.make)")


def _check_dataset_filter(exp: Experiment, src: Src) -> None:
    """`workload.max_total_len` (vllm bench's dataset filter): lognormal lengths whose means
    fit inside it."""
    w = exp.workload
    if w.max_total_len and (w.input_len_distribution, w.output_len_distribution) != ("lognormal",) * 2:
        raise SpecError(src("workload", "max_total_len"), "workload.max_total_len",
                        "expected lognormal input and output lengths with the dataset filter "
                        f"(got {w.input_len_distribution} and {w.output_len_distribution})")
    if w.max_total_len and not (MIN_DATASET_LEN < w.input_len < w.max_total_len // 2
                                and w.output_len > MIN_DATASET_LEN
                                and w.input_len + w.output_len < w.max_total_len):
        raise SpecError(src("workload", "max_total_len"), "workload.max_total_len",
                        f"expected a filter the mean lengths fit inside (input_len "
                        f"{w.input_len} in ({MIN_DATASET_LEN}, max_total_len / 2), output_len "
                        f"{w.output_len} > {MIN_DATASET_LEN}, their sum under max_total_len), "
                        f"got {w.max_total_len}")


def _check_model(exp: Experiment, src: Src) -> None:
    """The model against itself, its family, the tensor parallelism and the hardware."""
    m, e = exp.model, exp.engine
    if m.num_heads % e.tp:
        raise SpecError(src("engine", "tp"), "engine.tp",
                        f"expected a divisor of model.num_heads ({m.num_heads}), got {e.tp}")
    for key in ("num_dense_layers", "num_indexer_layers"):
        if getattr(m, key) > m.num_layers:
            raise SpecError(src("model", key), f"model.{key}",
                            f"expected at most model.num_layers ({m.num_layers}), "
                            f"got {getattr(m, key)}")
    if (bad := family_of(m).check(m)) is not None:
        raise SpecError(src("model", bad[0]), f"model.{bad[0]}", bad[1])
    if m.num_experts_per_tok > m.num_routed_experts:
        raise SpecError(src("model", "num_experts_per_tok"), "model.num_experts_per_tok",
                        f"expected at most model.num_routed_experts ({m.num_routed_experts})")
    if m.quantization == "nvfp4" and exp.hardware.fp4_tflops <= 0:
        raise SpecError(src("model", "quantization"), "model.quantization",
                        f"nvfp4 needs NVFP4 tensor cores; hardware {exp.hardware.name!r} has "
                        f"{'MXFP4 ones only' if exp.hardware.mxfp4_tflops > 0 else 'none'} "
                        f"(use {'mxfp4, ' if exp.hardware.mxfp4_tflops > 0 else ''}fp8 or bf16)")


def _check_batching(exp: Experiment, src: Src) -> None:
    """A decoding request fits a step; without chunked prefill, so does every prompt; uniform
    lengths have a range ratio below 1."""
    e, w = exp.engine, exp.workload
    if e.max_num_batched_tokens < 1 + exp.k:
        raise SpecError(src("engine", "max_num_batched_tokens"), "engine.max_num_batched_tokens",
                        f"expected >= 1 + num_speculative_tokens ({1 + exp.k}) so that one "
                        f"decoding request fits a step, got {e.max_num_batched_tokens}")
    if not e.enable_chunked_prefill and _max_len(w.input_len, w.input_len_distribution,
                                                 w.input_len_spread) > e.max_num_batched_tokens:
        raise SpecError(src("workload", "input_len"), "workload.input_len",
                        "expected prompts no longer than engine.max_num_batched_tokens "
                        f"({e.max_num_batched_tokens}) when chunked prefill is off")
    for name, dist, spread in (("input", w.input_len_distribution, w.input_len_spread),
                               ("output", w.output_len_distribution, w.output_len_spread)):
        if dist == "uniform" and spread >= 1:
            raise SpecError(src("workload", f"{name}_len_spread"), f"workload.{name}_len_spread",
                            f"expected a range ratio in [0, 1) for a uniform distribution, "
                            f"got {spread}")
        if dist == "lognormal" and spread > MAX_LOG_SIGMA:
            # beyond it nearly every length rounds to 1 token while the mean stays the spec's
            raise SpecError(src("workload", f"{name}_len_spread"), f"workload.{name}_len_spread",
                            f"expected a log-sigma in [0, {MAX_LOG_SIGMA:g}] for a lognormal "
                            f"distribution (ShareGPT's is about 1), got {spread}")


MAX_LOG_SIGMA = 3.0  # a lognormal length's sigma: at 3 the median is 1 % of the mean


# The requests' arrivals span num_prompts / request_rate seconds (vllm bench rescales them so):
# beyond 1e7 s (116 days) the simulated clock, a float in seconds, rounds the steps' milliseconds
# (measured at 64 prompts of pr47352.toml: median TTFT 532.62 ms up to 1e-6/s, 532.18 at 1e-8,
# 581.45 at 1e-10; at 256 prompts and 1e-12/s a P90 TTFT of 301 s).
MAX_ARRIVAL_SPAN_S = 1e7


def _check_arrival_span(exp: Experiment, src: Src) -> None:
    w = exp.workload
    span = w.num_prompts / w.request_rate
    if span > MAX_ARRIVAL_SPAN_S:
        where = src("workload", "num_prompts") if src("workload", "request_rate") == exp.source \
            else OVERRIDE_SOURCE
        raise SpecError(where, "workload.request_rate",
                        f"expected arrivals within {MAX_ARRIVAL_SPAN_S:,.0f} s (116 days; "
                        f"workload.num_prompts / request_rate), got {w.num_prompts} requests at "
                        f"{w.request_rate:g}/s, {span:.3g} s: the simulated clock would round the "
                        "steps' milliseconds away")


def _check_acceptance(exp: Experiment, src: Src) -> None:
    """Each list of acceptance rates: a known policy, one rate per draft position (unless a
    calibration file replaces them), marginal rates non-increasing."""
    a, c = exp.acceptance, exp.calibration
    for label, rates in [("acceptance.per_position", a.per_position),
                         *[(f"acceptance.policy_rates.{p}", r) for p, r in a.policy_rates.items()]]:
        if label.startswith("acceptance.policy_rates.") and label.rsplit(".", 1)[1] not in POLICIES:
            raise SpecError(src("acceptance", "policy_rates"), label,
                            f"expected a policy from {', '.join(POLICIES)}")
        if len(rates) < exp.k and not c.file:  # fewer: only a calibration file may replace them
            raise SpecError(src("acceptance", label.split(".")[1]), label,
                            f"expected at least {exp.k} rates (one per draft position, "
                            f"speculative.num_speculative_tokens = {exp.k}), got {len(rates)}"
                            + ("; give it more rates, or run `mtpsim sweep --set "
                               f"speculative.num_speculative_tokens={exp.k}`, which repeats the "
                               "last conditional rate and says so"
                               if label == "acceptance.per_position" else ""))
        if a.kind == "marginal":
            try:
                marginal_to_conditional(rates)
            except ValueError as err:
                raise SpecError(src("acceptance", label.split(".")[1]), label,
                                f"expected non-increasing marginal rates ({err})") from None


def _check_calibration(exp: Experiment, src: Src) -> None:
    """Measured rows hold plausible numbers; a fit names a measured policy and metrics."""
    c = exp.calibration
    for policy, row in c.measured.items():
        for key, v in row.items():
            values = v if isinstance(v, tuple) else (v,)
            # throughputs, times and acceptance lengths are positive (a 0 throughput divides);
            # counts and rates non-negative; all finite and below any benchmark's 1e12
            low_open = key.endswith(("_throughput", "_ms")) or key.endswith("acceptance_length")
            if not all(isinstance(x, int | float) and (0 < x if low_open else 0 <= x) and x <= 1e12
                       for x in values):
                raise SpecError(src("calibration", "measured"), f"calibration.measured.{policy}.{key}",
                                f"expected a {'positive' if low_open else 'non-negative'} number "
                                f"up to 1e12, got {v!r}")
    if c.fit and c.measured:
        row = c.measured.get(c.fit_policy)
        if row is None:
            raise SpecError(src("calibration", "fit_policy"), "calibration.fit_policy",
                            "expected a policy with a row in "
                            f"calibration.measured ({', '.join(c.measured)}), got {c.fit_policy!r}")
        missing = [mk for mk in c.fit_metrics if not isinstance(row.get(mk), float)]
        if missing:
            raise SpecError(src("calibration", "fit_metrics"), "calibration.fit_metrics",
                            "expected numbers present in "
                            f"calibration.measured.{c.fit_policy}; missing {', '.join(missing)}")
        if len(c.fit) > len(c.fit_metrics):
            raise SpecError(src("calibration", "fit"), "calibration.fit",
                            "expected at most as many factors as "
                            f"fit_metrics ({len(c.fit_metrics)}), got {len(c.fit)}")


def _max_len(mean: int, dist: str, spread: float) -> float:
    if dist == "fixed":
        return mean
    if dist == "uniform":
        return mean * (1 + spread)
    return math.inf if spread > 0 else mean
