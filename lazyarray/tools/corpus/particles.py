"""Particles pushed through a gridded field: bilinear interpolation by index arithmetic.

The gather step of particle-in-cell codes and of Lagrangian tracer models: each particle's
cell is ``floor(x / dx)``, its weights are the fractional offsets, the field is read at the
four corners with integer index arrays (wrapped with ``%`` on a periodic domain), the
velocity is kicked, the position drifts and is wrapped back into the box.
"""

import numpy

SIZES = {
    "test": {"particles": 500, "grid": 16, "steps": 3},
    "64K": {"particles": 65_536, "grid": 64, "steps": 5},
    "4M": {"particles": 4_194_304, "grid": 64, "steps": 5},
}


def make(params, seed):
    """Positions and velocities of the particles, the two field components, the steps."""
    rng = numpy.random.default_rng(seed)
    n, g = params["particles"], params["grid"]
    x = rng.random(n)
    y = rng.random(n)
    vx = 0.1 * rng.standard_normal(n)
    vy = 0.1 * rng.standard_normal(n)
    gx, gy = numpy.meshgrid(numpy.arange(g) / g, numpy.arange(g) / g, indexing="ij")
    ex = numpy.sin(2 * numpy.pi * gx) * numpy.cos(2 * numpy.pi * gy)
    ey = -numpy.cos(2 * numpy.pi * gx) * numpy.sin(2 * numpy.pi * gy)
    return x, y, vx, vy, ex, ey, params["steps"]


def run(np, x, y, vx, vy, ex, ey, steps, dt=0.01, length=1.0, qm=-1.0):
    """Return positions, velocities and the kinetic energy after `steps` steps."""
    ex, ey = np.asarray(ex), np.asarray(ey)
    x, y, vx, vy = np.asarray(x), np.asarray(y), np.asarray(vx), np.asarray(vy)
    g = ex.shape[0]
    dx = length / g
    for _ in range(steps):
        gx = x / dx
        gy = y / dx
        i0 = np.floor(gx).astype(int)
        j0 = np.floor(gy).astype(int)
        fx = gx - i0
        fy = gy - j0
        i0 = i0 % g
        j0 = j0 % g
        i1 = (i0 + 1) % g
        j1 = (j0 + 1) % g
        w00 = (1.0 - fx) * (1.0 - fy)
        w10 = fx * (1.0 - fy)
        w01 = (1.0 - fx) * fy
        w11 = fx * fy
        ex_p = w00 * ex[i0, j0] + w10 * ex[i1, j0] + w01 * ex[i0, j1] + w11 * ex[i1, j1]
        ey_p = w00 * ey[i0, j0] + w10 * ey[i1, j0] + w01 * ey[i0, j1] + w11 * ey[i1, j1]
        vx = vx + qm * dt * ex_p
        vy = vy + qm * dt * ey_p
        x = (x + dt * vx) % length
        y = (y + dt * vy) % length
    kinetic = 0.5 * np.sum(vx * vx + vy * vy)
    return x, y, vx, vy, kinetic
