"""Column physics of an ocean model: vertical mixing, then an implicit vertical diffusion.

One time step of what ocean models written with NumPy do in every water column: the mixing
coefficients of the `vmix` program (a Richardson-number closure, about twenty temporaries,
three outputs written into slices), then the temperature diffused implicitly with those
coefficients, a tridiagonal solve along ``z`` for all columns at once (the `thomas`
program's loops over the levels), repeated for a few steps. The script a new user tries
first: a short whole program whose first run is what they judge.
"""

import numpy

from . import thomas, vmix  # (relative: asv_bench/tools/first_run.py loads it without lazyarray)

SIZES = {
    "test": {"shape": (6, 7, 8), "steps": 2},
    "64K": {"shape": (40, 40, 40), "steps": 3},
    "4M": {"shape": (160, 160, 160), "steps": 3},
}


def make(params, seed):
    """The `vmix` inputs (temperature first), the layer thicknesses and the step count."""
    inputs = vmix.make(params, seed)
    return (*inputs, params["steps"])


def run(np, temp, salt, u, v, dzw, mask, kappa_h, kappa_m, tke, steps, dt=300.0):
    """Return the temperature after `steps` steps, the last diffusivity and kinetic energy."""
    temp = np.array(temp)
    for _ in range(steps):
        kappa_h, kappa_m, tke = vmix.run(np, temp, salt, u, v, dzw, mask, kappa_h, kappa_m,
                                         tke, dt)
        # implicit diffusion: -r[k-1] T[k-1] + (1 + r[k-1] + r[k]) T[k] - r[k] T[k+1] = T_old[k]
        r = dt * kappa_h / (dzw * dzw)
        lower = np.zeros_like(temp)
        upper = np.zeros_like(temp)
        lower[..., 1:] = -r[..., :-1]
        upper[..., :-1] = -r[..., :-1]
        diag = 1.0 - lower - upper
        temp = thomas.run(np, lower, diag, upper, temp)
    return temp, kappa_h, tke
