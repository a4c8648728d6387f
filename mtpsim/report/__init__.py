"""Every table and plot, and the one formatting vocabulary they share (`numbers`).

Modules: `numbers` (formatters), `tables` (the PR's benchmark layout, phases, measured rows, a
fit), `fit` (printing a table to fit the terminal), `titles`, `interrupt`. Import the module
you need; this package file imports nothing, so a light caller (the numbers) stays light.
"""
