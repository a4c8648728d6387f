"""Check that the README and docs stand alone in a clone of the repository.

1. Every relative Markdown link resolves to a file or folder inside the repository.
2. No text points outside it (`../shared/...`), and every repository path quoted in backticks
   (`experiments/...`, `docs/...`, `benchmarks/...`, `scripts/...`, `mtpsim/...`, `tests/...`) exists.
3. Every command in a ```bash block parses: `mtpsim ...` with mtpsim's own command line (options,
   argument types, and the experiment with its `--set` overrides loaded and validated), `python
   SCRIPT ...` against the options the script declares, `bash SCRIPT` by the script existing.
   Paths under runs/ (outputs of earlier commands) and $VARIABLES are placeholders, not checked.

Run: python scripts/check_docs.py [ROOT]   (exit 1 and one line per problem if any)
"""

from __future__ import annotations

import ast
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
REPO_PATH = re.compile(r"^(?:docs|experiments|benchmarks|scripts|mtpsim|tests)/[\w./-]*[\w/]$")
PLACEHOLDER = re.compile(r"^(runs/|\$|/path/|~)|[A-Z]{3,}|\*|<|\.\.\.")
ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def markdown_files(root: Path) -> list[Path]:
    files = [root / "README.md", *sorted((root / "docs").rglob("*.md")),
             *sorted((root / "experiments").rglob("*.md"))]
    return [f for f in files if f.is_file()]


def _where(root: Path, f: Path, text: str, pos: int) -> str:
    return f"{f.relative_to(root)}:{text.count(chr(10), 0, pos) + 1}"


def link_problems(root: Path) -> Iterator[str]:
    for f in markdown_files(root):
        text = f.read_text(encoding="utf-8")
        for m in LINK.finditer(text):
            target = m.group(1).split("#")[0]
            if not target or re.match(r"^[a-z]+:", target):
                continue
            path = (f.parent / target).resolve()
            if not path.is_relative_to(root.resolve()):
                yield f"{_where(root, f, text, m.start())}: link {target} points outside the repository"
            elif not path.exists():
                yield f"{_where(root, f, text, m.start())}: link {target} does not resolve"
        for m in re.finditer(r"\.\./shared|/work/shared", text):
            yield f"{_where(root, f, text, m.start())}: points outside the repository ({m.group(0)})"
        prose = FENCE.sub(lambda b: "\n" * b.group(0).count("\n"), text)
        for m in CODE_SPAN.finditer(prose):
            span = m.group(1).strip()
            if REPO_PATH.match(span) and not PLACEHOLDER.search(span) and not (root / span).exists():
                yield f"{_where(root, f, prose, m.start())}: `{span}` is not in the repository"


def run_commands(root: Path) -> Iterator[tuple[str, list[str]]]:
    """(file:line, argv) of each command in the ```bash blocks (continuations joined, comments
    dropped, one argv per `&&`/`;`/`|`-separated command, redirections dropped)."""
    for f in markdown_files(root):
        text = f.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            if block.group(1) not in ("bash", "sh", "shell"):
                continue
            start = text.count("\n", 0, block.start(2)) + 1
            joined, first = "", None
            for i, line in enumerate(block.group(2).splitlines()):
                first = start + i if first is None else first
                if line.rstrip().endswith("\\"):
                    joined += line.rstrip()[:-1] + " "
                    continue
                joined += line
                yield from _split(f"{f.relative_to(root)}:{first}", joined)
                joined, first = "", None


def _split(where: str, line: str) -> Iterator[tuple[str, list[str]]]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    argv: list[str] = []
    skip = False
    for tok in lexer:
        if skip:
            skip = False
        elif tok in (">", ">>", "<", "2>", "&>"):
            skip = True
        elif tok and set(tok) <= set(";&|"):
            if argv:
                yield where, argv
            argv = []
        else:
            argv.append(tok)
    if argv:
        yield where, argv


def _script_options(script: Path) -> set[str] | None:
    """The option strings an argparse script declares (None: it declares none we can read)."""
    opts: set[str] = set()
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            opts |= {a.value for a in node.args if isinstance(a, ast.Constant)
                     and isinstance(a.value, str) and a.value.startswith("-")}
    return opts or None


def _exists(root: Path, arg: str) -> bool:
    return PLACEHOLDER.search(arg) is not None or (root / arg).exists()


def command_problem(root: Path, argv: list[str]) -> str | None:
    while argv and ENV.match(argv[0]):
        argv = argv[1:]
    if not argv:
        return None
    if argv[0] == "mtpsim":
        return _mtpsim_problem(root, argv[1:])
    if argv[0] in ("python", "python3") and len(argv) > 1 and argv[1].endswith(".py"):
        script = root / argv[1]
        if not script.is_file():
            return f"{argv[1]} is not in the repository"
        declared = _script_options(script)
        for a in argv[2:]:
            opt = a.split("=")[0]
            if a.startswith("--") and declared is not None and opt not in declared | {"--help"}:
                return f"{argv[1]} has no option {opt} (it declares {', '.join(sorted(declared))})"
        return None
    if argv[0] == "bash" and len(argv) > 1 and not (root / argv[1]).is_file():
        return f"{argv[1]} is not in the repository"
    return None  # pip, pytest, vllm, ...: not mtpsim's to check


def _mtpsim_problem(root: Path, args: list[str]) -> str | None:
    import typer.main

    try:  # Typer >= 0.20 carries its own copy of click
        from typer._click import exceptions as click_exc  # type: ignore[import-not-found]
    except ImportError:
        from click import exceptions as click_exc

    from mtpsim.cli import app
    from mtpsim.errors import UserError

    group = typer.main.get_command(app)
    if not args or args[0] not in group.commands:  # type: ignore[attr-defined]
        return f"mtpsim has no command {args[0] if args else '(none)'}"
    name, rest = args[0], args[1:]
    cmd = group.commands[name]  # type: ignore[attr-defined]
    try:
        ctx = cmd.make_context(name, list(rest))
    except click_exc.ClickException as e:
        return f"mtpsim {name}: {e.format_message()}"
    params = ctx.params
    exp = params.get("experiment")
    if exp is not None and not _exists(root, str(exp)):
        return f"mtpsim {name}: {exp} is not in the repository"
    for item in params.get("inputs") or []:
        path = item.partition("=")[2] or item
        if not _exists(root, path):
            return f"mtpsim {name}: {path} is not in the repository"
    sets = list(params.get("set_") or [])
    if exp is not None and not PLACEHOLDER.search(str(exp)) and name != "sweep" and "$" not in str(sets):
        import contextlib

        from mtpsim.spec import load_experiment
        from mtpsim.spec.paths import command_line_sets

        try:  # from the repository's root, as a reader runs the docs' commands: a relative path
            with contextlib.chdir(root):  # in a --set is read from the current folder
                spec = load_experiment(exp, command_line_sets(exp, sets))
                if spec.calibration.file:  # resolved as simulate resolves it
                    from mtpsim.calibration.schema import read_calibration
                    from mtpsim.models.build import calibration_path

                    read_calibration(calibration_path(spec))
        except UserError as e:
            return f"mtpsim {name}: {e.message()}"
    return None


def problems(root: Path) -> list[str]:
    root = root.resolve()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    out = list(link_problems(root))
    for where, argv in run_commands(root):
        if (p := command_problem(root, argv)) is not None:
            out.append(f"{where}: {shlex.join(argv)}: {p}")
    return out


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    found = problems(root)
    for p in found:
        print(p)
    n = sum(1 for _ in run_commands(root.resolve()))
    print(f"{len(markdown_files(root))} Markdown files, {n} commands: "
          f"{len(found)} problem{'s' if len(found) != 1 else ''}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
