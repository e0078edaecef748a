"""asv benchmarks for lazyarray (see docs/benchmarks.md).

bench_workloads  W1-W9, engine = numpy | lazyarray, cached execution (compile in setup)
bench_overhead   graph build cost per op, cached small-graph evaluation, 100-op chain
bench_compile    cold compile of a new kernel, disk-cache load, and track_* counters
"""
