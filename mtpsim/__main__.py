"""`python -m mtpsim`: the same CLI as the `mtpsim` script (used to launch child servers)."""

from mtpsim.cli import main

main()
