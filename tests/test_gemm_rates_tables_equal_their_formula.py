"""`gemm_rates`' lookup tables are built one BLOCK_N at a time (docs/speed.md, start-up round 12):
they must hold, bit for bit, what the model's formula gives as one [tiles, BLOCK_N] array and its
row minimum, as they were first built."""

import numpy as np
import pytest

from mtpsim.models import gemm_rates as g


def _columns_2d(n: float, sms: int) -> np.ndarray:
    tiles_m = np.arange(g._TABLE_TILES + 1, dtype=float)[:, None]
    waves = np.ceil(tiles_m * np.ceil(n / g.BLOCK_NS) / sms)
    return np.min(waves * g.BLOCK_NS, axis=1)


def _row_units_2d(n: float, sms: int, e128: float, e64: float) -> np.ndarray:
    m = np.arange(g._TABLE_ROWS + 1, dtype=float)
    small = m <= g.SMALL_M
    cols = _columns_2d(n, sms)[np.ceil(m / np.where(small, 64.0, 128.0)).astype(np.intp)]
    return cols * np.where(small, 64.0 / e64, 128.0 / e128)


@pytest.mark.parametrize("sms", [78, 132, 148, 256, 304])
@pytest.mark.parametrize("n", [1.0, 7.0, 16.0, 64.0, 100.0, 576.0, 1536.0, 7168.0, 9216.0, 129280.0])
def test_tables_equal_the_2d_formula_bit_for_bit(n, sms):
    assert g._columns.__wrapped__(n, sms).tobytes() == _columns_2d(n, sms).tobytes()
    e128, e64 = g.FIT[0], g.FIT[1]
    assert g._row_units.__wrapped__(n, sms, e128, e64).tobytes() == \
        _row_units_2d(n, sms, e128, e64).tobytes()
