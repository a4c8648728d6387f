"""`mtpsim run-real` with the MTP indexer's keys still projected and written at reused draft steps.

The reference engine before issue #11: under `share` the MTP layer skipped scoring and top-k at
draft steps >= 1 but still ran the indexer's projections and wrote its keys
(`Attention.eager_index_keys = True`). benchmarks/long_context_e2e.py --before runs this beside
the faithful engine to time the skip end to end. Same arguments as `mtpsim run-real`.
"""

from __future__ import annotations

import functools

from mtpsim.engine import weights


def _eager(load):
    @functools.wraps(load)
    def wrapped(*args, **kwargs):
        model = load(*args, **kwargs)
        model.mtp.block.attention.eager_index_keys = True
        return model

    return wrapped


def main() -> None:
    weights.load = _eager(weights.load)  # the runner looks it up at call time
    from mtpsim.cli import app

    app()


if __name__ == "__main__":
    main()
