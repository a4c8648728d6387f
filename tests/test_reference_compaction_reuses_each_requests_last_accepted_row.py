"""After draft step 0 (one top-k row per verified token of every request), compaction moves each
request's *last accepted* token's row to the front; steps >= 1 read exactly that row, never a
neighbour's (upstream bug #47238)."""

from __future__ import annotations

import torch
from _reference_models import prompts, run, tiny_model

from mtpsim.engine.engine import EngineConfig, SpecDecodeEngine


def test_every_reused_row_is_the_step0_row_of_the_last_accepted_position():
    model = tiny_model()
    engine = SpecDecodeEngine(model, EngineConfig(num_speculative_tokens=3, index_topk=4,
                                                  max_num_seqs=3, max_model_len=128, policy="share"))
    mtp, choose = model.mtp, model.mtp._choose
    step0: dict = {}
    checked: list[tuple[int, int]] = []  # (request slot, offset of its last accepted row)

    def spying_choose(fresh, input_pos, target_rows):
        used = choose(fresh, input_pos, target_rows)
        slots = spying_choose.slots
        if not mtp.skip_topk:
            step0.clear()
            for b in range(input_pos.shape[0]):
                for t in range(input_pos.shape[1]):
                    step0[(int(slots[b]), int(input_pos[b, t]))] = (used[b, t].clone(), t)
        else:
            for b in range(input_pos.shape[0]):
                # draft step s queries position p + s and must reuse the step-0 row of p
                p = int(input_pos[b, 0]) - spying_choose.step
                row, t = step0[(int(slots[b]), p)]
                assert torch.equal(used[b, 0], row)
                checked.append((int(slots[b]), t))
        return used

    draft = model.draft

    def draft_with_slots(tokens, hidden, input_pos, slots, topk):
        spying_choose.slots = slots
        spying_choose.step = 0 if not mtp.skip_topk else spying_choose.step + 1
        return draft(tokens, hidden, input_pos, slots, topk)

    mtp._choose = spying_choose
    model.draft = draft_with_slots
    run(model, prompts(16, (5, 30, 12, 8)), "share", k=3, topk=4, max_tokens=30, engine=engine)
    offsets = {t for _, t in checked if t < 3}
    assert len(checked) > 20
    assert len(offsets) >= 3  # requests with different numbers of accepted drafts were compacted


def test_compaction_gathers_rows_by_last_token_indices():
    model = tiny_model()
    model.mtp.rows = torch.arange(12).view(6, 2)
    model.mtp.rows_pos = torch.arange(6) + 100
    model.compact_topk_indices(torch.tensor([4, 1, 5]))
    assert model.mtp.rows[:3].tolist() == [[8, 9], [2, 3], [10, 11]]
    assert model.mtp.rows_pos[:3].tolist() == [104, 101, 105]
