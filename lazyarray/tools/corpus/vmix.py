"""Vertical mixing coefficients of an ocean model, column physics on a 3-D grid.

The shape of the kernels in ocean models written with NumPy: a linear equation of state,
the buoyancy frequency and the vertical shear at the cell interfaces, a Richardson-number
closure (a Pacanowski-Philander form) with convective adjustment where the column is
unstable, a ``tanh`` ramp between the regimes, a mixing length from the turbulent kinetic
energy -- about twenty named temporaries -- and three outputs written into slices of
preallocated arrays, the last one a ``-=`` update of the turbulent kinetic energy.
"""

import numpy

SIZES = {
    "test": {"shape": (6, 7, 8)},
    "64K": {"shape": (40, 40, 40)},
    "4M": {"shape": (160, 160, 160)},
}


def make(params, seed):
    """Temperature, salinity, velocities, layer thicknesses, land mask and the arrays the
    kernel writes into (diffusivity, viscosity, turbulent kinetic energy)."""
    rng = numpy.random.default_rng(seed)
    nx, ny, nz = params["shape"]
    depth = numpy.linspace(0.0, 1.0, nz)
    temp = 20.0 - 15.0 * depth + 0.5 * rng.standard_normal((nx, ny, nz))
    salt = 35.0 + 0.5 * depth + 0.1 * rng.standard_normal((nx, ny, nz))
    u = 0.2 * rng.standard_normal((nx, ny, nz))
    v = 0.2 * rng.standard_normal((nx, ny, nz))
    dzw = 10.0 + 40.0 * depth
    mask = (rng.random((nx, ny, nz)) > 0.1).astype(float)
    kappa_h = numpy.zeros((nx, ny, nz))
    kappa_m = numpy.zeros((nx, ny, nz))
    tke = rng.uniform(1e-6, 1e-3, (nx, ny, nz))
    return temp, salt, u, v, dzw, mask, kappa_h, kappa_m, tke


def run(np, temp, salt, u, v, dzw, mask, kappa_h, kappa_m, tke, dt=300.0):
    """Return the updated diffusivity, viscosity and turbulent kinetic energy."""
    rho0, grav, alpha_t, beta_s = 1024.0, 9.81, 2e-4, 7.6e-4
    nu0, kappa_b, nu_b, kappa_conv = 1e-2, 1e-5, 1e-4, 1.0
    ri_c, ri_w, c_eps, eps = 0.25, 0.1, 0.7, 1e-12
    kappa_h = np.array(kappa_h)
    kappa_m = np.array(kappa_m)
    tke = np.array(tke)

    rho = rho0 * (1.0 - alpha_t * (temp - 10.0) + beta_s * (salt - 35.0))
    dz = dzw[:-1]
    drho = rho[:, :, 1:] - rho[:, :, :-1]
    n2 = grav / rho0 * drho / dz
    du = u[:, :, 1:] - u[:, :, :-1]
    dv = v[:, :, 1:] - v[:, :, :-1]
    shear2 = (du * du + dv * dv) / (dz * dz)
    ri = n2 / np.maximum(shear2, eps)
    ri_pos = np.maximum(ri, 0.0)
    denom = 1.0 + 5.0 * ri_pos
    visc_pp = nu0 / (denom * denom) + nu_b
    diff_pp = visc_pp / denom + kappa_b
    unstable = n2 < 0.0
    diff_cv = np.where(unstable, kappa_conv, diff_pp)
    visc_cv = np.where(unstable, kappa_conv, visc_pp)
    ramp = 0.5 * (1.0 + np.tanh((ri - ri_c) / ri_w))
    diff_mix = ramp * kappa_b + (1.0 - ramp) * diff_cv
    visc_mix = ramp * nu_b + (1.0 - ramp) * visc_cv
    wet = mask[:, :, :-1] * mask[:, :, 1:]
    e = tke[:, :, :-1]
    n_safe = np.sqrt(np.maximum(n2, eps))
    mxl = np.minimum(np.sqrt(2.0 * e) / n_safe, dz)
    mxl = np.maximum(mxl, 1e-8)
    production = visc_mix * shear2 - diff_mix * n2
    dissipation = c_eps * e * np.sqrt(e) / mxl

    kappa_h[:, :, :-1] = diff_mix * wet
    kappa_m[:, :, :-1] = visc_mix * wet
    tke[:, :, :-1] -= dt * wet * (dissipation - production) * 1e-3
    return kappa_h, kappa_m, tke
