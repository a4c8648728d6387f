"""Every table, plot and number formatter lives in mtpsim/report/: no module outside it builds a
table (rich's or mtpsim.plainprint's), imports matplotlib, or defines a function that formats a
number it is given. mtpsim/plainprint.py is the table type itself (it builds the rich table it
stands for), so it alone is exempt. The detector is checked on the helpers the move deleted."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "mtpsim"
TABLE_PRIMITIVE = PKG / "plainprint.py"
TABLE_MODULES = ("rich.table", "mtpsim.plainprint")


def _outside_report() -> list[Path]:
    return [p for p in sorted(PKG.rglob("*.py")) if "report" not in p.relative_to(PKG).parts[:1]]


def _formats_a_parameter(fn: ast.FunctionDef) -> bool:
    """The function returns its own argument put through a format spec: f"{x:.2f}",
    format(x, spec) or spec.format(x), directly or in a conditional expression."""
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    returns = [n.value for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None]
    for value in returns:
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, ast.IfExp):
                stack += [v.body, v.orelse]
            elif isinstance(v, ast.BoolOp):
                stack += v.values
            elif isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "replace":
                stack.append(v.func.value)
            elif isinstance(v, ast.JoinedStr):
                if any(isinstance(f, ast.FormattedValue) and f.format_spec is not None
                       and isinstance(f.value, ast.Name) and f.value.id in params for f in v.values):
                    return True
            elif isinstance(v, ast.Call) and v.args and isinstance(v.args[0], ast.Name):
                f, arg = v.func, v.args[0].id
                if arg in params and ((isinstance(f, ast.Name) and f.id == "format")
                                      or (isinstance(f, ast.Attribute) and f.attr == "format")):
                    return True
    return False


def formatters(tree: ast.AST) -> list[str]:
    return [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and _formats_a_parameter(n)]


def tables_and_plots(tree: ast.AST) -> list[str]:
    """Imports of a table type or matplotlib, and calls that build a table."""
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module in TABLE_MODULES and any(
                a.name == "Table" for a in n.names):
            found.append(f"line {n.lineno}: imports {n.module}.Table")
        elif isinstance(n, ast.Import | ast.ImportFrom):
            mods = [a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""]
            found += [f"line {n.lineno}: imports {m}" for m in mods if m.split(".")[0] == "matplotlib"]
        elif isinstance(n, ast.Call):
            name = n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "")
            if name == "Table":
                found.append(f"line {n.lineno}: builds a Table")
    return found


def test_no_module_outside_report_builds_a_table_or_a_plot():
    bad = {str(p.relative_to(PKG)): hits for p in _outside_report() if p != TABLE_PRIMITIVE
           for hits in [tables_and_plots(ast.parse(p.read_text()))] if hits}
    assert not bad, f"tables and plots belong in mtpsim/report/: {bad}"


def test_no_module_outside_report_defines_a_number_formatter():
    bad = {str(p.relative_to(PKG)): names for p in _outside_report()
           for names in [formatters(ast.parse(p.read_text()))] if names}
    assert not bad, f"number formatters belong in mtpsim/report/numbers.py: {bad}"


def test_the_vocabulary_and_the_tables_are_where_the_rule_says():
    report = PKG / "report"
    assert formatters(ast.parse((report / "numbers.py").read_text()))
    assert all(tables_and_plots(ast.parse((report / f"{m}.py").read_text()))
               for m in ("tables", "uncertainty", "calibration", "compare", "sweep", "advise", "plots"))


def test_the_detector_flags_the_helpers_the_move_deleted():
    """The shapes of the duplicate helpers (report/tables, compare, sweep, calibration/report,
    uncertainty/tables, domain, headline) and of a table built in a command are caught."""
    deleted = '''
def _fmt(x, key):
    if math.isnan(x):
        return "-"
    return f"{x:,.2f}"
def _fmt2(fmt, v):
    return "-" if not isinstance(v, int | float) or math.isnan(v) else fmt.format(v)
def _f(x, fmt=".3f"):
    return "-" if x is None else format(x, fmt)
def _num(x):
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:g}"
def _pct(x):
    return f"{x:+.2f} %".replace("-", "\\u2212")
def not_a_formatter(out, r):
    return out / f"r{r.round:02d}.json"
'''
    assert formatters(ast.parse(deleted)) == ["_fmt", "_fmt2", "_f", "_num", "_pct"]
    command = "from rich.table import Table\nimport matplotlib.pyplot as plt\nt = Table(title='x')\n"
    assert len(tables_and_plots(ast.parse(command))) == 3
