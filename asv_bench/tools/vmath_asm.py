"""Does LLVM vectorize the loops around the compiled sin, cos, log and exp?

    python asv_bench/tools/vmath_asm.py [-v]     (from the repository root)

Builds a few kernels the way lazyarray does (W1's `a*b + c*d - sin(e)`, a `cos` sum, a
`log`, a `log1p`, an `expm1`, W4's exp row sum), recompiles each generated source with Numba's serial `njit`
(Numba hides the machine code of cached and parallel kernels; the loops are the same) and
counts in its LLVM IR and assembly: <8 x double> and <4 x double> vector values, zmm
(AVX-512) and ymm (AVX2) instructions, packed fma instructions and gathers/scatters (which
would mean the loads did not come out contiguous). -v prints the zmm and ymm lines of each;
--dump writes each kernel's assembly to kernel_*.s in the current directory.
"""

from __future__ import annotations

import re
import sys

import numba
import numpy as np
from numba import prange

import lazyarray as la
import lazyarray.backends.numba_scalar as _h
import lazyarray.runtime.executor as ex


def main() -> None:
    rng = np.random.default_rng(0)
    n = 300_000
    with la.options(backend="cpu", eager_threshold=0):
        a, b, c, d, e = (la.asarray(rng.uniform(-10, 10, n)) for _ in range(5))
        np.asarray(a * b + c * d - la.sin(e))
        np.asarray(la.cos(a).sum())
        np.asarray(la.log(la.abs(a)) * 2)
        np.asarray(la.log1p(a * a))
        np.asarray(la.expm1(a) - b)
        x, y = la.asarray(rng.uniform(-3, 3, 2000)), la.asarray(rng.uniform(-3, 3, 300))
        np.asarray(la.exp(-(x[:, None] - y) ** 2).sum(1))
    for entry in list(ex._cache.values()):
        if not entry.source or entry.kernel is None:
            continue
        ns = {"np": np, "prange": prange, "_h": _h}
        exec(entry.source, ns)  # noqa: S102 (our own generated kernel source)
        built = [k for k in entry.kernel if k.signatures]
        kernel = numba.njit(error_model="numpy")(ns["kernel"])
        sig = built[0].signatures[0]
        kernel.compile(sig)
        asm, ir = kernel.inspect_asm(sig), kernel.inspect_llvm(sig)
        math = sorted(set(re.findall(r"_h\.(\w+)\(", entry.source)))
        fma = len(re.findall(r"vfn?m(?:add|sub)\w*pd\s[^\n]*[yz]mm", asm))
        print(f"kernel using {', '.join(math) or '-'}: <8 x double> / <4 x double> in IR: "
              f"{ir.count('<8 x double>')} / {ir.count('<4 x double>')}, zmm / ymm "
              f"instructions: {asm.count('zmm')} / {asm.count('ymm')}, packed fma: {fma}, "
              f"gathers/scatters: {asm.count('vgather') + asm.count('vscatter')}")
        if "-v" in sys.argv:
            print("\n".join(line for line in asm.splitlines() if "zmm" in line or "ymm" in line))
        if "--dump" in sys.argv:
            with open(f"kernel_{entry.signature if hasattr(entry, 'signature') else id(entry)}.s",
                      "w") as f:
                f.write(asm)


if __name__ == "__main__":
    main()
