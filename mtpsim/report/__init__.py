"""Every table and plot, and the one formatting vocabulary they share.

`numbers` (the formatters); tables per command family: `tables` (the PR's benchmark layout,
phases, measured rows, a fit, acceptance bars), `uncertainty`, `calibration`, `compare`, `sweep`,
`advise`; `plots` (every PNG); `fit` (printing a table to the terminal's width), `titles`,
`interrupt`. Import the module you need: this file imports nothing, so a light caller stays light.
"""
