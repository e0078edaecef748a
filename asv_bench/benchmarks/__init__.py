"""asv benchmarks for lazyarray (see docs/benchmarks.md).

bench_workloads  W1-W9, engine = numpy | lazyarray, cached execution (compile in setup)
bench_overhead   graph build cost per op, cached small-graph evaluation, 100-op chain
bench_compile    cold compile of a new kernel, disk-cache load, and track_* counters
"""

import os

# The benchmarks time the steady state: a kernel is compiled in `setup`, on the calling thread
# (the default tier would run the first timed calls on the interpreter while a worker process
# compiles). bench_compile times the tiers themselves.
os.environ.setdefault("LAZYARRAY_COMPILE", "now")
