"""Linear shallow-water equations on a staggered grid, stepped with slice updates.

The forward-backward scheme of geophysical fluid dynamics classes: surface height ``h`` at
cell centres, velocities ``u`` and ``v`` on the faces (an Arakawa C grid), walls at the
boundary (the edge velocities stay zero). Each step updates the interior velocities from
the height gradient with ``-=`` on slices, then the height from the new divergence.
"""

import numpy

SIZES = {
    "test": {"n": 20, "steps": 4},
    "64K": {"n": 256, "steps": 10},
    "4M": {"n": 2048, "steps": 10},
}


def make(params, seed):
    """A Gaussian bump on a still basin plus small noise, and the step count."""
    rng = numpy.random.default_rng(seed)
    n = params["n"]
    yy, xx = numpy.mgrid[0:n, 0:n] / n
    h = 0.1 * numpy.exp(-((xx - 0.4) ** 2 + (yy - 0.6) ** 2) / 0.01)
    h += 1e-3 * rng.standard_normal((n, n))
    return h, params["steps"]


def run(np, h0, steps, depth=100.0, grav=9.81):
    """Return the height, both velocities and the total volume after `steps` steps."""
    h = np.array(h0)
    ny, nx = h.shape
    dx = 1000.0 / nx
    dt = 0.2 * dx / np.sqrt(grav * depth)
    u = np.zeros((ny, nx + 1))
    v = np.zeros((ny + 1, nx))
    for _ in range(steps):
        u[:, 1:-1] -= grav * dt / dx * (h[:, 1:] - h[:, :-1])
        v[1:-1, :] -= grav * dt / dx * (h[1:, :] - h[:-1, :])
        h -= depth * dt / dx * ((u[:, 1:] - u[:, :-1]) + (v[1:, :] - v[:-1, :]))
    return h, u, v, h.sum()
