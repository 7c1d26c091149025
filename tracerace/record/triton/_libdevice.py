"""``libdevice`` under the recorder: the functions Triton's interpreter lacks.

A kernel calls libdevice through ``triton.language.extra.libdevice`` (stubs
that compiled Triton resolves to the backend's library, and that return
None under the interpreter) or through ``triton.language.extra.cuda.libdevice``
(``extern_elementwise`` calls, which the interpreter's builder refuses). The
recorder points both at one path: each function runs the CUDA module's own
version, so Triton itself checks the argument types and broadcasts the
arguments as it does when compiling, and the builder's
``create_extern_elementwise`` computes the element values with the NumPy
function of :data:`NUMPY` for the libdevice name being called. A name
without a NumPy version (or a stub without a CUDA version) refuses the
recording, naming the function and the kernel line; it never yields None.
"""

from __future__ import annotations

import inspect
import math

import numpy as np


def _elementwise(fn):
    """A scalar ``math`` function applied to every element."""
    return np.vectorize(fn, otypes=[np.float64])


def _round_half_away(x):
    """C's ``round``: halves go away from zero (NumPy's ``round`` goes to even)."""
    x = np.asarray(x, dtype=np.float64)
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _fdim(x, y):
    return np.where(np.isnan(x) | np.isnan(y), np.nan, np.maximum(x - y, 0))


def _fma(x, y, z):
    # The product of two fp32 values is exact in fp64: one rounding, as a fused op.
    return np.asarray(x, dtype=np.float64) * y + z


NUMPY = {
    # roots and reciprocals
    "sqrt": np.sqrt,
    "sqrt_rn": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "rsqrt_rn": lambda x: 1 / np.sqrt(x),
    "rcp_rn": lambda x: 1 / x,
    "cbrt": np.cbrt,
    "rcbrt": lambda x: 1 / np.cbrt(x),
    "hypot": np.hypot,
    "rhypot": lambda x, y: 1 / np.hypot(x, y),
    # exponentials and logarithms
    "exp": np.exp,
    "exp2": np.exp2,
    "exp10": lambda x: np.power(10.0, x),
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "pow": np.power,
    "fast_expf": np.exp,
    "fast_exp10f": lambda x: np.power(10.0, x),
    "fast_logf": np.log,
    "fast_log2f": np.log2,
    "fast_log10f": np.log10,
    "fast_powf": np.power,
    "ldexp": lambda x, e: np.ldexp(x, np.asarray(e, dtype=np.int32)),
    "scalbn": lambda x, e: np.ldexp(x, np.asarray(e, dtype=np.int32)),
    # trigonometric and hyperbolic
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "atan2": np.arctan2,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "sinpi": lambda x: np.sin(np.pi * np.asarray(x, dtype=np.float64)),
    "cospi": lambda x: np.cos(np.pi * np.asarray(x, dtype=np.float64)),
    "fast_sinf": np.sin,
    "fast_cosf": np.cos,
    "fast_tanf": np.tan,
    # special functions
    "erf": _elementwise(math.erf),
    "erfc": _elementwise(math.erfc),
    "lgamma": _elementwise(math.lgamma),
    "tgamma": _elementwise(math.gamma),
    # rounding and parts
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "rint": np.rint,
    "nearbyint": np.rint,
    "round": _round_half_away,
    "abs": np.abs,
    "copysign": np.copysign,
    "fmod": np.fmod,
    "remainder": _elementwise(math.remainder),
    "fdim": _fdim,
    "nextafter": np.nextafter,
    "saturatef": lambda x: np.clip(x, 0, 1),
    # arithmetic with a named rounding (round to nearest is NumPy's)
    "add_rn": np.add,
    "sub_rn": np.subtract,
    "mul_rn": np.multiply,
    "div_rn": np.divide,
    "fast_dividef": np.divide,
    "fma": _fma,
    "fma_rn": _fma,
    # classification
    "isnan": np.isnan,
    "isinf": np.isinf,
    "signbit": np.signbit,
    "finitef": np.isfinite,
    "isfinited": np.isfinite,
}
"""libdevice name -> the NumPy function computing its elements."""


class Libdevice:
    """Routes libdevice calls of the recorded program (see the module)."""

    def __init__(self, refuse) -> None:
        """``refuse(message)`` returns the exception that fails the recording; the
        message is completed with the kernel line by the caller."""
        self._refuse = refuse
        self._calling: list[str] = []  # libdevice names being called, innermost last

    def install(self, builder, semantic, np_dtype) -> None:
        """Replace the functions of Triton's libdevice modules (the stubs of
        ``triton.language.extra.libdevice``, then CUDA's, whose functions
        type-check and broadcast a call) and ``builder``'s
        ``create_extern_elementwise``; ``np_dtype`` gives a Triton type's NumPy dtype."""
        from triton.language.extra import libdevice as stubs
        from triton.language.extra.cuda import libdevice as cuda

        backend = {
            name: fn for name, fn in vars(cuda).items() if callable(fn) and not name.startswith("_")
        }
        for module in (stubs, cuda):
            module_name = module.__name__
            for name, fn in list(vars(module).items()):
                if (
                    inspect.isfunction(fn)
                    and not name.startswith("_")
                    and fn.__module__ == module_name
                ):
                    setattr(module, name, self._function(name, backend.get(name), semantic))

        def create_extern_elementwise(libName, libPath, symbol, argList, retType, isPure):
            return self.compute(symbol, argList, retType, np_dtype)

        builder.create_extern_elementwise = create_extern_elementwise

    def _function(self, name: str, backend, semantic):
        def call(*args, _semantic=None, **kwargs):
            if backend is None:
                raise self._refuse(f"libdevice.{name} has no CUDA version to run")
            self._calling.append(name)
            try:
                return backend(*args, _semantic=semantic, **kwargs)
            finally:
                self._calling.pop()

        call.__name__ = call.__qualname__ = name
        return call

    def compute(self, symbol: str, handles, ret_type, np_dtype):
        """The interpreter's value of the libdevice call now being made."""
        from triton.runtime.interpreter import TensorHandle

        name = self._calling[-1] if self._calling else symbol
        fn = NUMPY.get(name)
        if fn is None:
            raise self._refuse(f"libdevice.{name} ({symbol}) has no CPU version in the recorder")
        scalar = getattr(ret_type, "scalar", ret_type)
        with np.errstate(all="ignore"):  # a GPU gives inf and nan without a word
            data = fn(*(h.data for h in handles))
        return TensorHandle(np.asarray(data).astype(np_dtype(scalar)), scalar)
