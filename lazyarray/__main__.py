"""`python -m lazyarray [bench options]`: the showcase -- lazyarray against NumPy on real
workloads, side by side (see docs/benchmarks.md)."""

import sys

from lazyarray.showcase import main

if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["bench"]:
        args = args[1:]
    sys.exit(main(args))
