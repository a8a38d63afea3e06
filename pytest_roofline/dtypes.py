"""Precisions: canonical names, aliases and bytes per element.

Canonical names are the keys of the spec files' peak tables: ``fp64``, ``fp32``, ``tf32``,
``bf16``, ``fp16``, ``fp8``, ``fp6``, ``fp4``, ``int8``, ``int4``. Framework spellings
(``torch.bfloat16``, numpy's ``float32``, ``float8_e4m3fn``, ``half``) map onto them, so an
array's ``.dtype`` can be read without importing its framework.
"""

from __future__ import annotations

from .errors import UnsupportedPrecisionError

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
}

_ALIASES: dict[str, str] = {
    "float64": "fp64", "double": "fp64", "f64": "fp64",
    "float32": "fp32", "float": "fp32", "f32": "fp32", "single": "fp32",
    "tensorfloat32": "tf32",
    "bfloat16": "bf16",
    "float16": "fp16", "half": "fp16", "f16": "fp16",
    "float8": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "float8_e4m3": "fp8",
    "float8_e4m3fnuz": "fp8", "float8_e5m2fnuz": "fp8", "e4m3": "fp8", "e5m2": "fp8",
    "fp8_e4m3": "fp8", "fp8_e5m2": "fp8",
    "float6": "fp6", "float4": "fp4", "float4_e2m1fn_x2": "fp4", "nvfp4": "fp4", "mxfp4": "fp4",
    "qint8": "int8", "uint8": "int8", "i8": "int8", "s8": "int8",
    "uint4": "int4", "i4": "int4", "s4": "int4",
}


def canonical(name: object) -> str:
    """The canonical name of a precision given as a string or a framework dtype object.

    >>> canonical("torch.bfloat16"), canonical("float32"), canonical("FP8")
    ('bf16', 'fp32', 'fp8')
    """
    if name in ITEMSIZE:  # the common case, already canonical
        return name  # type: ignore[return-value]
    text = getattr(name, "name", None) if not isinstance(name, str) else name
    if not isinstance(text, str):
        text = str(name)
    key = text.strip().lower()
    for prefix in ("torch.", "jnp.", "numpy.", "np.", "jax.numpy.", "tf."):
        if key.startswith(prefix):
            key = key[len(prefix):]
    key = key.replace("-", "_")
    if key in ITEMSIZE:
        return key
    if key in _ALIASES:
        return _ALIASES[key]
    raise UnsupportedPrecisionError(
        f"unknown precision {text!r}; known precisions: {', '.join(ITEMSIZE)}."
        + _suggest(key)
    )


def itemsize(name: object) -> float:
    """Bytes per element of a precision (0.5 for 4-bit types)."""
    return ITEMSIZE[canonical(name)]


def _suggest(key: str) -> str:
    """Close precisions, by the names the message lists (an alias hit names its precision):
    never a spelling such as 'f16' that the list of known precisions does not show."""
    from .errors import close_matches

    hits = [_ALIASES.get(h, h) for h in close_matches(key, [*ITEMSIZE, *_ALIASES])]
    names = list(dict.fromkeys(hits))
    return " Did you mean " + " or ".join(map(repr, names)) + "?" if names else ""
