"""One request as a benchmark client sees it (`RequestRecord`): what `--json`, `--out` and the real
runs keep per request. Apart from mtpsim.metrics, whose formulas read its fields, so that a
printed `simulate`, which builds none (docs/speed.md, rounds 9 and 10), does not create the
class at start-up."""

from __future__ import annotations

from dataclasses import field

from mtpsim.dataclass import dataclass


@dataclass(slots=True)
class RequestRecord:
    """One request as a benchmark client sees it; times in seconds from the run start.

    ITLs are run-length encoded (`itl_s[j]` repeated `itl_count[j]` times) so that a simulator
    advancing many identical steps at once need not store one value per step.
    """

    request_id: str
    input_len: int
    output_len: int
    arrival_s: float
    first_token_s: float
    finish_s: float
    itl_s: list[float] = field(default_factory=list)
    itl_count: list[int] = field(default_factory=list)
    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    accepted_per_pos: list[int] = field(default_factory=list)

    @property
    def ttft_s(self) -> float:
        return self.first_token_s - self.arrival_s

    @property
    def e2el_s(self) -> float:
        return self.finish_s - self.arrival_s

    @property
    def tpot_s(self) -> float | None:
        if self.output_len <= 1:
            return None
        return (self.e2el_s - self.ttft_s) / (self.output_len - 1)
