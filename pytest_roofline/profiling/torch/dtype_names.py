"""The dtype names a PyTorch profiler trace records (``Input type``), as torch names them:
one table for the readers that price a call (:mod:`.pricing`) and a compiled kernel
(:mod:`.inductor`)."""

from __future__ import annotations

#: The profiler's names of tensor dtypes -> torch attribute names.
DTYPES = {
    "float": "float32", "double": "float64", "c10::Half": "float16",
    "c10::BFloat16": "bfloat16", "long int": "int64", "long": "int64", "int": "int32",
    "short int": "int16", "short": "int16", "signed char": "int8",
    "unsigned char": "uint8", "bool": "bool", "c10::complex<float>": "complex64",
    "c10::complex<double>": "complex128", "c10::Float8_e4m3fn": "float8_e4m3fn",
    "c10::Float8_e5m2": "float8_e5m2", "c10::Float8_e4m3fnuz": "float8_e4m3fnuz",
    "c10::Float8_e5m2fnuz": "float8_e5m2fnuz", "long unsigned int": "uint64",
    "unsigned long": "uint64", "unsigned int": "uint32", "short unsigned int": "uint16",
    "unsigned short": "uint16",
}
