"""options(background_compile=True): a kernel that is not built yet is built off-thread while
the interpreter answers; once built, the same program launches it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

import lazyarray as la
from lazyarray.backends import numba_cpu
from lazyarray.runtime import executor

PROGRAM = textwrap.dedent("""
    import json, time
    import numpy as np
    import lazyarray as la
    x = la.asarray(np.linspace(0, 1, 200_000))
    y = la.asarray(np.linspace(1, 2, 200_000))
    def run():
        return float(la.sqrt(((x * 1.5 - y) ** 2).sum()))
    want = float(np.sqrt(((np.linspace(0, 1, 200_000) * 1.5 - np.linspace(1, 2, 200_000)) ** 2).sum()))
    first = run()
    at_first = la.cache_info()
    done = la.wait_compiles(timeout=300)
    second = run()
    report = la.explain()
    print(json.dumps({"first": first, "second": second, "want": want, "done": done,
                      "at_first": at_first, "after": la.cache_info(),
                      "origin": report.kernels[0].origin}))
""")


def run_program(cache: str) -> dict:
    env = {**os.environ, "LAZYARRAY_CACHE_DIR": cache, "LAZYARRAY_BACKGROUND_COMPILE": "1"}
    out = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True,
                         text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_first_call_interprets_then_the_kernel_runs(tmp_path):
    for origin in ("compiled", "disk"):  # a fresh cache, then a second process that loads it
        r = run_program(str(tmp_path))
        assert np.isclose(r["first"], r["want"], rtol=1e-12)
        assert np.isclose(r["second"], r["want"], rtol=1e-12)
        first, after = r["at_first"], r["after"]
        assert first["background_interpreted"] == 1 and first["kernels_launched"] == 0
        assert r["done"] and after["kernels_launched"] == 1
        assert after["background_interpreted"] == 1
        assert r["origin"] == origin
        key = "compiles" if origin == "compiled" else "disk_hits"
        assert after[key] == 1


def test_failed_background_build_falls_back(monkeypatch, caplog, tmp_path):
    def broken(*args, **kwargs):
        raise RuntimeError("no compiler today")

    monkeypatch.setattr(numba_cpu, "compile_kernel", broken)
    executor.cache_clear()  # fresh kernel entries: every one must be built
    x = la.asarray(np.linspace(-1, 1, 50_000))
    try:
        # (a cache of its own: a kernel of the same shape another test left on disk would be
        # linked from its image, and nothing would fail to build)
        with la.options(background_compile=True, eager_threshold=0, cache_dir=str(tmp_path)):
            before = la.cache_info()
            got = np.asarray(la.tanh(x) * 3 + 1)
            assert la.wait_compiles(timeout=60)
            again = np.asarray(la.tanh(x) * 3 + 1)
            after = la.cache_info()
    finally:
        executor.cache_clear()  # drop the entries marked as failed
    want = np.tanh(np.linspace(-1, 1, 50_000)) * 3 + 1
    np.testing.assert_allclose(got, want, rtol=1e-14)
    np.testing.assert_allclose(again, want, rtol=1e-14)
    assert after["background_interpreted"] - before["background_interpreted"] == 1
    assert after["fallbacks"] - before["fallbacks"] == 1  # the caller's own build failed too
    assert "no compiler today" in caplog.text


def test_env_switch(monkeypatch):
    from lazyarray import config

    monkeypatch.setenv("LAZYARRAY_BACKGROUND_COMPILE", "1")
    assert config._from_env().background_compile
    monkeypatch.setenv("LAZYARRAY_BACKGROUND_COMPILE", "0")
    assert not config._from_env().background_compile
    assert la.wait_compiles(timeout=10)
