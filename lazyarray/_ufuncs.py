"""Every NumPy ufunc as a lazy ufunc: one explicit line each (tests keep this in sync with
NumPy's own list; matmul, vecdot, matvec, vecmat and isnat are not elementwise over our dtypes)."""

import numpy as np

from lazyarray.array import UFUNCS, ufunc

absolute = ufunc(np.absolute)
add = ufunc(np.add)
arccos = ufunc(np.arccos)
arccosh = ufunc(np.arccosh)
arcsin = ufunc(np.arcsin)
arcsinh = ufunc(np.arcsinh)
arctan = ufunc(np.arctan)
arctan2 = ufunc(np.arctan2)
arctanh = ufunc(np.arctanh)
bitwise_and = ufunc(np.bitwise_and)
bitwise_count = ufunc(np.bitwise_count)
bitwise_or = ufunc(np.bitwise_or)
bitwise_xor = ufunc(np.bitwise_xor)
cbrt = ufunc(np.cbrt)
ceil = ufunc(np.ceil)
conjugate = ufunc(np.conjugate)
copysign = ufunc(np.copysign)
cos = ufunc(np.cos)
cosh = ufunc(np.cosh)
deg2rad = ufunc(np.deg2rad)
degrees = ufunc(np.degrees)
divide = ufunc(np.divide)
divmod = ufunc(np.divmod)
equal = ufunc(np.equal)
exp = ufunc(np.exp)
exp2 = ufunc(np.exp2)
expm1 = ufunc(np.expm1)
fabs = ufunc(np.fabs)
float_power = ufunc(np.float_power)
floor = ufunc(np.floor)
floor_divide = ufunc(np.floor_divide)
fmax = ufunc(np.fmax)
fmin = ufunc(np.fmin)
fmod = ufunc(np.fmod)
frexp = ufunc(np.frexp)
gcd = ufunc(np.gcd)
greater = ufunc(np.greater)
greater_equal = ufunc(np.greater_equal)
heaviside = ufunc(np.heaviside)
hypot = ufunc(np.hypot)
invert = ufunc(np.invert)
isfinite = ufunc(np.isfinite)
isinf = ufunc(np.isinf)
isnan = ufunc(np.isnan)
lcm = ufunc(np.lcm)
ldexp = ufunc(np.ldexp)
left_shift = ufunc(np.left_shift)
less = ufunc(np.less)
less_equal = ufunc(np.less_equal)
log = ufunc(np.log)
log10 = ufunc(np.log10)
log1p = ufunc(np.log1p)
log2 = ufunc(np.log2)
logaddexp = ufunc(np.logaddexp)
logaddexp2 = ufunc(np.logaddexp2)
logical_and = ufunc(np.logical_and)
logical_not = ufunc(np.logical_not)
logical_or = ufunc(np.logical_or)
logical_xor = ufunc(np.logical_xor)
maximum = ufunc(np.maximum)
minimum = ufunc(np.minimum)
modf = ufunc(np.modf)
multiply = ufunc(np.multiply)
negative = ufunc(np.negative)
nextafter = ufunc(np.nextafter)
not_equal = ufunc(np.not_equal)
positive = ufunc(np.positive)
power = ufunc(np.power)
rad2deg = ufunc(np.rad2deg)
radians = ufunc(np.radians)
reciprocal = ufunc(np.reciprocal)
remainder = ufunc(np.remainder)
right_shift = ufunc(np.right_shift)
rint = ufunc(np.rint)
sign = ufunc(np.sign)
signbit = ufunc(np.signbit)
sin = ufunc(np.sin)
sinh = ufunc(np.sinh)
spacing = ufunc(np.spacing)
sqrt = ufunc(np.sqrt)
square = ufunc(np.square)
subtract = ufunc(np.subtract)
tan = ufunc(np.tan)
tanh = ufunc(np.tanh)
trunc = ufunc(np.trunc)

# aliases: the same ufunc objects under NumPy's other names
abs = absolute
acos = arccos
acosh = arccosh
asin = arcsin
asinh = arcsinh
atan = arctan
atan2 = arctan2
atanh = arctanh
bitwise_invert = invert
bitwise_left_shift = left_shift
bitwise_not = invert
bitwise_right_shift = right_shift
conj = conjugate
mod = remainder
pow = power
true_divide = divide

isnat = ufunc(np.isnat)  # datetimes only: validates dtypes, then NumPy

UFUNCS.update({u.__name__: u for u in list(globals().values()) if isinstance(u, ufunc)})
