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
    g._TABLES.clear()
    assert g._columns(n, sms).tobytes() == _columns_2d(n, sms).tobytes()
    e128, e64 = g.FIT[0], g.FIT[1]
    assert g._row_units(n, sms, e128, e64).tobytes() == _row_units_2d(n, sms, e128, e64).tobytes()


@pytest.mark.parametrize("sms", [78, 132, 148])
@pytest.mark.parametrize("n", [7.0, 576.0, 7168.0, 129280.0])
def test_tables_built_as_far_as_asked_hold_the_full_tables_entries(n, sms):
    """A table is built to the entries asked (a power of two from 1,024) and grows when asked
    more (docs/speed.md, start-up round 14): each size holds the full table's first entries,
    bit for bit, and answers every entry asked."""
    e128, e64 = g.FIT[0], g.FIT[1]
    full_cols, full_rows = _columns_2d(n, sms), _row_units_2d(n, sms, e128, e64)
    g._TABLES.clear()
    for top in (0, 5, 1024, 1025, 3000, g._TABLE_TILES):
        cols = g._columns(n, sms, top)
        assert len(cols) > top and cols.tobytes() == full_cols[:len(cols)].tobytes()
    g._TABLES.clear()
    sizes = []
    for top in (0, 64, 129, 1024, 8192, 8193, 40000, g._TABLE_ROWS):
        rows = g._row_units(n, sms, e128, e64, top)
        sizes.append(len(rows))
        assert len(rows) > top and rows.tobytes() == full_rows[:len(rows)].tobytes()
    assert sizes == [1025, 1025, 1025, 1025, 8193, 16385, 65537, 65537]


def test_tensor_seconds_after_a_small_table_equals_the_full_tables():
    """The same step array priced with tables built as far as it asks and with the full ones."""
    m = np.array([0.0, 1.0, 63.5, 64.0, 65.0, 128.0, 129.0, 4096.0, 8192.0, 20000.0, 70000.0])
    groups = np.array([1.0, 3.0, 256.0, 256.0, 8.0, 1.0, 2.0, 256.0, 256.0, 256.0, 256.0])
    args = (7168.0, 2048.0, 132, 1979e12)
    g._TABLES.clear()
    small = [g.tensor_seconds(1, m[:5], *args), g.tensor_seconds(groups[:5], m[:5], *args),
             g.tensor_seconds(1, m, *args), g.tensor_seconds(groups, m, *args),
             g.tensor_seconds(4, 63.0, *args), g.tensor_seconds(4, 700.0, *args)]
    g._TABLES.clear()
    g._columns(7168.0, 132), g._row_units(7168.0, 132, g.FIT[0], g.FIT[1])
    full = [g.tensor_seconds(1, m[:5], *args), g.tensor_seconds(groups[:5], m[:5], *args),
            g.tensor_seconds(1, m, *args), g.tensor_seconds(groups, m, *args),
            g.tensor_seconds(4, 63.0, *args), g.tensor_seconds(4, 700.0, *args)]
    assert [np.asarray(x).tobytes() for x in small] == [np.asarray(x).tobytes() for x in full]


def test_blend_entries_computed_per_array_equal_the_table_bit_for_bit(monkeypatch):
    """`blend` computes the steps of an array of at most _BLEND_DIRECT entries and looks larger ones
    up in the table (docs/speed.md, start-up round 14): every entry, computed in arrays of any
    size and order, is the table's, and a small array blends as it does inside a large one."""
    p = g.FIT[3]
    table = g._blend_table(p)
    steps = np.arange(g._BLEND_STEPS + 2)
    for chunk in (1, 3, 44, 512, 4096):
        parts = [g._blend_at(steps[s:s + chunk], p) for s in range(0, len(steps), chunk)]
        assert np.concatenate(parts).tobytes() == table.tobytes()
    shuffled = np.random.default_rng(0).permutation(steps)[:g._BLEND_DIRECT]
    assert g._blend_at(shuffled, p).tobytes() == table[shuffled].tobytes()
    rng = np.random.default_rng(1)
    t_c, t_m = rng.uniform(0, 1e-3, 4000), rng.uniform(0, 1e-3, 4000)
    whole = g.blend(t_c, t_m)  # looked up
    assert len(t_c) > g._BLEND_DIRECT
    for budget in (0, 10**6):  # small arrays looked up (after the first calls), and computed
        monkeypatch.setattr(g, "_BLEND_DIRECT_CALLS", [budget])
        small = np.concatenate([g.blend(t_c[s:s + 40], t_m[s:s + 40]) for s in range(0, 4000, 40)])
        assert small.tobytes() == whole.tobytes()
        assert g._BLEND_DIRECT_CALLS[0] == max(0, budget - 100)
