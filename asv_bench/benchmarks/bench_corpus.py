"""The program corpus (``lazyarray.tools.corpus``) at its 64K size: NumPy against lazyarray.

Each program is a NumPy program written as scientists write it (stencils, a tridiagonal
solve along an axis, ocean column physics, particles, image filters, Monte Carlo,
time stepping, and the row/column/element loops of published benchmark kernels); one
``time_*`` per engine runs it on the same seeded inputs and reads every output with
``np.asarray``. Setup runs the program once, so the time is a warm run (kernels cached).

The corpus is imported from the package, not copied: at a commit without it, setup raises
``NotImplementedError`` and asv reports the benchmark as skipped.
"""

from __future__ import annotations

import numpy as np

from .common import require_lazyarray

try:
    from lazyarray.tools.corpus import PROGRAMS
except ImportError:  # a commit before the corpus
    PROGRAMS = None

NAMES = ["heat2d", "thomas", "vmix", "particles", "imfilter", "mc_option", "mc_pi",
         "shallow_water", "gramschmidt", "gauss_seidel", "forward_subst", "syrk",
         "floyd_warshall", "covariance"]


def _outputs(result):
    items = result if isinstance(result, (tuple, list)) else (result,)
    return [np.asarray(o) for o in items]


class Corpus:
    param_names = ["program"]
    params = [NAMES]
    timeout = 600
    repeat = (1, 10, 20.0)

    def setup(self, program):
        if PROGRAMS is None or program not in PROGRAMS:
            raise NotImplementedError(f"no corpus program {program} at this commit")
        self.module = PROGRAMS[program]
        self.inputs = self.module.make(self.module.SIZES["64K"], 0)
        self.la = require_lazyarray()
        _outputs(self.module.run(np, *self.inputs))
        _outputs(self.module.run(self.la, *self.inputs))  # warm-up: compile, fill the cache

    def teardown(self, program):
        self.inputs = None

    def time_numpy(self, program):
        _outputs(self.module.run(np, *self.inputs))

    def time_lazyarray(self, program):
        _outputs(self.module.run(self.la, *self.inputs))
