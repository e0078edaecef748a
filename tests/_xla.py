"""Compile and run StableHLO text with jaxlib's XLA on the CPU: the export tests' consumer."""

import os

# fewer LLVM passes: these modules are tiny, and compiling them is most of the test time
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0 "
                                   "--xla_llvm_disable_expensive_passes=true")

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

from jax._src import xla_bridge
from jax._src.interpreters import mlir
from jax._src.lib import xla_client
from jaxlib.mlir import ir


def parse(text: str):
    """Parse and verify with the StableHLO and func dialects registered (raises if invalid)."""
    with mlir.make_ir_context():
        module = ir.Module.parse(text)
        assert module.operation.verify()
        return str(module)


def run(text: str, *args) -> list[np.ndarray]:
    """Parse, compile with XLA for the CPU, run on `args`; the results as NumPy arrays."""
    backend = xla_bridge.get_backend("cpu")
    device = backend.devices()[0]
    with mlir.make_ir_context():
        module = ir.Module.parse(text)
        exe = backend.compile_and_load(module, executable_devices=xla_client.DeviceList((device,)),
                                       compile_options=xla_client.CompileOptions())
    outs = exe.execute([jax.device_put(np.asarray(a), device) for a in args])
    return [np.asarray(o) for o in outs]
