"""Shared pytest configuration for the lazyarray differential test suite.

NumPy is the oracle everywhere: every test computes the same thing with NumPy
and with lazyarray and compares shape, dtype and values.

Hypothesis profiles (select with ``HYPOTHESIS_PROFILE=<name>``, default ``ci``):

* ``ci``       -- derandomized, ~25 examples per test, no deadline (compiles
                  make the first example of a test slow).
* ``dev``      -- random, fewer examples, for quick local iteration.
* ``thorough`` -- random, many examples; run with ``-m "slow or not slow"``.

The ``mode`` fixture runs a test twice: once on the NumPy reference
interpreter (``backend="numpy"``) and once on the compiled Numba CPU backend
with ``eager_threshold=0`` so that even tiny arrays go through compiled
kernels.
"""

import os
import warnings

# Kernels compile on the calling thread in the tests (what counts of compiles, launches and
# buffers assert); tests/test_tiers.py runs the default tier (a worker process compiles while
# the interpreter answers), and subprocess tests that set the variable themselves.
os.environ.setdefault("LAZYARRAY_COMPILE", "now")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

import lazyarray as la  # noqa: E402

_SUPPRESSED = [
    HealthCheck.too_slow,
    HealthCheck.function_scoped_fixture,  # `mode` only switches options; it is safe to share
    HealthCheck.data_too_large,
    HealthCheck.filter_too_much,
]

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=25,
    suppress_health_check=_SUPPRESSED,
    print_blob=True,
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=10,
    suppress_health_check=_SUPPRESSED,
)
settings.register_profile(
    "thorough",
    deadline=None,
    max_examples=500,
    suppress_health_check=_SUPPRESSED,
    print_blob=True,
)
settings.register_profile(  # the differential suite on the CUDA simulator (slow kernels)
    "sim",
    derandomize=True,
    deadline=None,
    max_examples=6,
    suppress_health_check=_SUPPRESSED,
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "slow: exhaustive variants (full dtype cross products, ...); "
        "deselected by default, run with `-m slow` or `--runslow`",
    )


def pytest_addoption(parser):
    parser.addoption(
        "--runslow", action="store_true", default=False, help="also run tests marked slow"
    )
    parser.addoption(
        "--shard", default=None, metavar="I/N",
        help="run only every N-th collected test, starting at the I-th (0-based): one of N "
             "parts of a run (tests/test_cuda.py splits the simulator's long files so)",
    )


def pytest_collection_modifyitems(config, items):
    # Slow tests are opt-in: `--runslow`, or an explicit `-m` expression that
    # mentions them (e.g. `-m slow`).  Otherwise they are deselected (not
    # skipped), so the default run reports them as "deselected".
    if not (config.getoption("--runslow") or "slow" in (config.getoption("markexpr") or "")):
        _deselect(config, items, lambda k, item: "slow" not in item.keywords)
    # heavy tests first: pytest-xdist hands out the first quarter of the tests in turn, so
    # the minute-long ones spread over the workers instead of ending one worker's run alone
    items.sort(key=lambda item: "heavy" not in item.keywords)  # (a stable sort)
    if config.getoption("--shard"):
        i, n = map(int, config.getoption("--shard").split("/"))
        if not 0 <= i < n:
            raise pytest.UsageError(f"--shard {i}/{n}: I must be in 0..N-1")
        _deselect(config, items, lambda k, item: k % n == i)


def _deselect(config, items, keep) -> None:
    flags = [keep(k, item) for k, item in enumerate(items)]
    if not all(flags):
        config.hook.pytest_deselected(items=[i for i, f in zip(items, flags) if not f])
        items[:] = [i for i, f in zip(items, flags) if f]


# Work around a hypothesis (6.155) pytest-plugin quirk: for every invocation
# of a *parametrized* @given test it wraps the function's settings in a new
# ``settings(parent=<previous>)``, so the parent chain grows by one per
# parameter set.  With ``database=None`` (implied by derandomize) the
# ``database`` property is never cached and walks the whole chain: quadratic
# time, then RecursionError after ~1000 parameter sets.  Restore the original
# settings object before the plugin's wrapper runs.
_ORIGINAL_HYPOTHESIS_SETTINGS = {}


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_call(item):
    fn = getattr(item.obj, "__func__", item.obj)
    current = getattr(fn, "_hypothesis_internal_use_settings", None)
    if current is not None:
        original = _ORIGINAL_HYPOTHESIS_SETTINGS.setdefault(fn, current)
        fn._hypothesis_internal_use_settings = original
    yield


# LAZYARRAY_TEST_BACKEND=cuda (under NUMBA_ENABLE_CUDASIM=1, see tests/test_cuda.py) or =xla
# (JAX on its CPU client, see tests/test_xla_backend.py) runs the same differential tests with
# that backend as the compiled one
COMPILED_BACKEND = os.environ.get("LAZYARRAY_TEST_BACKEND", "cpu")
if COMPILED_BACKEND == "xla":  # (tests/test_xla_backend.py): JAX on the CPU, small programs:
    # fewer LLVM passes, compiling is most of the time
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    # NumPy's subnormal results too (XLA flushes them; docs/xla.md, "Subnormals")
    os.environ.setdefault("LAZYARRAY_XLA_SUBNORMALS", "strict")
    os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0 "
                                       "--xla_llvm_disable_expensive_passes=true")
if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    # the simulator runs each GPU thread as a Python thread and polls them from the main
    # one: hand the GIL over often (20x faster kernels here)
    import sys

    sys.setswitchinterval(5e-5)
    if os.environ.get("LAZYARRAY_SIM_POLLING") != "1":  # (=1: the simulator's own polling)
        from sim_barrier import install

        install()  # its threads meet at a blocking barrier, not a polling loop
MODES = {
    "interp": dict(backend="numpy"),
    "compiled": dict(backend=COMPILED_BACKEND, eager_threshold=0),
}


@pytest.fixture(params=list(MODES), ids=list(MODES))
def mode(request):
    """Run the test under the interpreter and under compiled kernels."""
    with la.options(**MODES[request.param]):
        yield request.param


@pytest.fixture
def compiled():
    """Force compiled kernels for every evaluation (no interpreter tier)."""
    with la.options(backend=COMPILED_BACKEND, eager_threshold=0):
        yield


@pytest.fixture
def fast_math():
    """Compiled float math by lazyarray's own formulas (`math="fast"`): the tests of those
    formulas' accuracy and code (the default calls NumPy's loops: tests/test_numpy_loops.py)."""
    with la.options(math="fast"):
        yield


@pytest.fixture(autouse=True)
def _quiet_numpy():
    """NumPy warns on overflow, division by zero, invalid values...; the
    tests compare *values*, so those warnings are noise here (tests that care
    about a warning ask for it explicitly)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        yield


def pytest_sessionfinish(session, exitstatus):
    """The compile worker of this test process (tiered tests started it) does not go on
    building their kernels after the tests end."""
    from lazyarray.runtime import compile_service

    compile_service.stop()
