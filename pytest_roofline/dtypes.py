"""Precisions: canonical names, aliases and bytes per element.

Canonical names are the keys of the spec files' peak tables: ``fp64``, ``fp32``, ``tf32``,
``bf16``, ``fp16``, ``fp8``, ``fp6``, ``fp4``, ``int8``, ``int4``, plus the integer and
boolean types of real arrays, ``int64``, ``int32``, ``int16`` and ``bool`` (one byte, as numpy,
torch and jax store it). Framework spellings (``torch.bfloat16``, numpy's ``float32``,
``float8_e4m3fn``, ``half``) map onto them, so an array's ``.dtype`` can be read without
importing its framework. A precision may be given as:

* a name (``"bf16"``, ``"torch.float16"``, ``"uint8"``);
* a framework dtype object (``torch.float16``, ``np.dtype("float16")``, jax's dtypes): read
  through its ``.name`` or its text;
* a dtype class (``np.float16``, ``jnp.bfloat16``): read through its ``__name__``, duck-typed,
  so jax is never imported. Python's own ``float``, ``int`` and ``bool`` follow numpy:
  ``fp64``, ``int64``, ``bool``.

Anything else (a list, a number, None) is an :class:`UnsupportedPrecisionError` naming it.

Unsigned integers are priced as the signed type of the same width (``uint8`` is ``int8``:
same bytes, and the matrix units' 8-bit integer instructions take unsigned operands too).
Which peak prices integer and boolean work is the analysis's rule: integer matrix work runs
at the chip's int8 (int4) matrix peak only in int8 (int4); ``int16``, ``int32``, ``int64`` and
``bool`` work runs on the vector units (see :data:`VECTOR_ONLY`).
"""

from __future__ import annotations

from .errors import UnsupportedPrecisionError, brief, close_matches

#: Bytes one element occupies in memory. tf32 is computed on the matrix units but stored as fp32.
ITEMSIZE: dict[str, float] = {
    "fp64": 8.0,
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp6": 0.75,
    "fp4": 0.5,
    "int4": 0.5,
    "int64": 8.0,
    "int32": 4.0,
    "int16": 2.0,
    "bool": 1.0,
}

#: Precisions no matrix unit multiplies: a matrix kernel in one of them runs on the vector
#: units (see :class:`~pytest_roofline.engine.workload.Kernel`).
VECTOR_ONLY = frozenset({"int64", "int32", "int16", "bool"})

#: The type a computed precision is stored in, where it differs (tf32 results are fp32).
STORAGE: dict[str, str] = {"tf32": "fp32"}

_ALIASES: dict[str, str] = {
    "float64": "fp64", "double": "fp64", "f64": "fp64",
    "float32": "fp32", "float": "fp32", "f32": "fp32", "single": "fp32",
    "tensorfloat32": "tf32",
    "bfloat16": "bf16",
    "float16": "fp16", "half": "fp16", "f16": "fp16",
    "float8": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "float8_e4m3": "fp8",
    "float8_e4m3fnuz": "fp8", "float8_e5m2fnuz": "fp8", "e4m3": "fp8", "e5m2": "fp8",
    "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "f8e4m3fn": "fp8", "f8e5m2": "fp8",
    "f8e4m3fnuz": "fp8", "f8e5m2fnuz": "fp8", "f8e4m3": "fp8",
    "float6": "fp6", "float4": "fp4", "float4_e2m1fn_x2": "fp4", "nvfp4": "fp4", "mxfp4": "fp4",
    "qint8": "int8", "uint8": "int8", "quint8": "int8", "i8": "int8", "s8": "int8",
    "u8": "int8", "byte": "int8",
    "uint4": "int4", "i4": "int4", "s4": "int4", "u4": "int4",
    "long": "int64", "uint64": "int64", "i64": "int64", "s64": "int64", "u64": "int64",
    "int": "int32", "uint32": "int32", "i32": "int32", "s32": "int32", "u32": "int32",
    "qint32": "int32",
    "short": "int16", "uint16": "int16", "i16": "int16", "s16": "int16", "u16": "int16",
    "bool_": "bool", "bool8": "bool", "boolean": "bool", "pred": "bool",
}

#: Python's builtin types as dtypes, the numpy way (``np.dtype(float)`` is float64).
_BUILTIN_TYPES = {"float": "fp64", "int": "int64", "bool": "bool"}

#: Names and dtype objects already read (bounded), so an array's dtype costs a lookup.
_SEEN: dict[object, str] = {}

_PREFIXES = ("torch.", "jnp.", "numpy.", "np.", "jax.numpy.", "tf.", "ml_dtypes.")


def _text(name: object) -> str:
    """The text of a precision given as a name, a dtype object or a dtype class."""
    if isinstance(name, str):
        return name
    if isinstance(name, type):
        if name.__module__ == "builtins" and name.__name__ in _BUILTIN_TYPES:
            return _BUILTIN_TYPES[name.__name__]
        inner = getattr(name, "dtype", None)  # jax's scalar types carry a numpy dtype
        inner_name = getattr(inner, "name", None)
        if isinstance(inner_name, str):
            return inner_name
        return name.__name__
    label = getattr(name, "name", None)
    if isinstance(label, str):
        return label
    kind = type(name).__name__.lower()
    if kind in ("dtype", "dtypemeta") or kind.endswith("dtype"):  # torch.dtype, tf.DType ...
        return str(name)
    raise UnsupportedPrecisionError(
        f"a precision must be a name such as 'bf16' or a framework dtype (torch.float16, "
        f"np.float16), got {brief(name)} ({type(name).__name__})")


def canonical(name: object) -> str:
    """The canonical name of a precision given as a string, a dtype object or a dtype class.

    >>> canonical("torch.bfloat16"), canonical("float32"), canonical("FP8")
    ('bf16', 'fp32', 'fp8')
    """
    if type(name) is str and name in ITEMSIZE:  # the common case, already canonical
        return name
    try:
        return _SEEN[name]  # an array's dtype object, a framework spelling seen before
    except (KeyError, TypeError):  # not seen, or unhashable (refused below)
        pass
    text = _text(name)
    key = text.strip().lower()
    for prefix in _PREFIXES:
        if key.startswith(prefix):
            key = key[len(prefix):]
    key = key.replace("-", "_")
    found = key if key in ITEMSIZE else _ALIASES.get(key)
    if found is not None:
        if len(_SEEN) < 1024:
            _SEEN[name] = found
        return found
    raise UnsupportedPrecisionError(
        f"unknown precision {brief(text)}; known precisions: {', '.join(ITEMSIZE)}."
        + _suggest(key[:64]))


def itemsize(name: object) -> float:
    """Bytes per element of a precision (0.5 for 4-bit types)."""
    return ITEMSIZE[canonical(name)]


#: Complex types (framework and HLO spellings) -> the precision of each of their two parts.
#: They are never priced as a precision (no peak is quoted for them); only their width is read.
COMPLEX_PARTS: dict[str, str] = {"complex64": "fp32", "c64": "fp32",
                                 "complex128": "fp64", "c128": "fp64"}


def element_bytes(name: object) -> float:
    """Bytes one element of the type *name* occupies in memory: :data:`ITEMSIZE` of its
    precision, or two parts' for a complex type (``complex64``, HLO's ``c64``). The one rule
    every table of widths reads; an :class:`UnsupportedPrecisionError` for a type it does
    not know (its width is never guessed here).

    >>> element_bytes("bfloat16"), element_bytes("c64"), element_bytes("int4")
    (2.0, 8.0, 0.5)
    """
    text = _text(name).strip().lower().removeprefix("torch.").removeprefix("numpy.")
    part = COMPLEX_PARTS.get(text)
    return 2.0 * ITEMSIZE[part] if part else itemsize(name)


def _suggest(key: str) -> str:
    """Close precisions, by the names the message lists (an alias hit names its precision):
    never a spelling such as 'f16' that the list of known precisions does not show."""
    hits = [_ALIASES.get(h, h) for h in close_matches(key, [*ITEMSIZE, *_ALIASES])]
    names = list(dict.fromkeys(hits))
    return " Did you mean " + " or ".join(map(repr, names)) + "?" if names else ""


def storage(name: str) -> str:
    """The canonical precision a result computed in *name* is stored in (tf32 -> fp32)."""
    return STORAGE.get(name, name)
