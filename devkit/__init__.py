"""Developer tools shared by the test suite and the benchmarks; not part of the wheel.

`devkit.shared` locates the reference data folder and names the trace of each reference
folder; `devkit.badinput` generates damaged traces (the known bad inputs and the seeded fuzzer).
"""
