"""`python -m lazyarray [bench options]`: the showcase -- lazyarray against NumPy (and the
peers that are installed) on real workloads, side by side (see docs/benchmarks.md).

    python -m lazyarray [bench] [--quick] [--json FILE] ...   the side-by-side runner
    python -m lazyarray bench --cold [--workloads W1,...]     first runs in fresh processes
    python -m lazyarray cache [info|list|clear]               the on-disk kernel cache
    python -m lazyarray coverage [--markdown FILE]            native vs fallback NumPy names
    python -m lazyarray replay DIR [--backend cpu|numpy]      re-run a LAZYARRAY_DUMP_DIR snapshot
    python -m lazyarray bench --backend cuda [--quick] [--tests] the CUDA backend on a GPU
"""

import json
import sys

from lazyarray._coverage import main as coverage
from lazyarray.replay import main as replay
from lazyarray.runtime import diskcache
from lazyarray.tools.cold import main as cold
from lazyarray.tools.cuda_check import main as cuda_check
from lazyarray.tools.showcase import main as showcase


def main(args: list[str]) -> int:
    if args[:1] == ["coverage"]:
        return coverage(args[1:])
    if args[:1] == ["replay"]:
        return replay(args[1:])
    if args[:1] == ["cache"]:
        if args[1:2] == ["clear"]:
            diskcache.clear()
            print("cleared", diskcache.base_dir())
            return 0
        if args[1:] == ["list"]:
            for row in diskcache.kernels():
                print(json.dumps(row))
            return 0
        if args[1:] not in ([], ["info"]):
            print("usage: python -m lazyarray cache [info|list|clear]", file=sys.stderr)
            return 2
        print(json.dumps(diskcache.info(), indent=2))
        return 0
    if args[:2] == ["bench", "--cold"] or args[:1] == ["--cold"]:
        return cold(args[2:] if args[:1] == ["bench"] else args[1:])
    if args[:1] == ["bench"] and args[1:3] == ["--backend", "cuda"]:
        return cuda_check(args[3:])
    return showcase(args[1:] if args[:1] == ["bench"] else args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
