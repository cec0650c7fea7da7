"""A small safetensors reader/writer (numpy only, no `safetensors` package).

File layout: an 8-byte little-endian unsigned header length N, then N bytes of
UTF-8 JSON, then the raw tensor data.  The header maps each tensor name to
``{"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}`` (offsets
relative to the first byte after the header) and may carry an optional
``"__metadata__"`` object of string -> string.  Data is row-major little
endian.  The writer pads the header with spaces to a multiple of 8 bytes and
lays the tensors out contiguously in the order given.

Supported dtypes: F32, F64, I64, I32.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from pathlib import Path

import numpy as np

#: safetensors dtype tag -> little-endian numpy dtype
DTYPES: dict[str, np.dtype] = {
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
}
_TAGS: dict[np.dtype, str] = {dt.newbyteorder("="): tag for tag, dt in DTYPES.items()}

METADATA_KEY = "__metadata__"
_MAX_HEADER = 100 * 1024 * 1024


class SafetensorsError(ValueError):
    """A malformed file or an unsupported tensor."""


def _tag_of(array: np.ndarray) -> str:
    tag = _TAGS.get(array.dtype.newbyteorder("="))
    if tag is None:
        raise SafetensorsError(f"unsupported dtype {array.dtype} (supported: {', '.join(DTYPES)})")
    return tag


def dumps(tensors: Mapping[str, np.ndarray], metadata: Mapping[str, str] | None = None) -> bytes:
    """Serialize named arrays (and optional string metadata) to safetensors bytes."""
    header: dict[str, object] = {}
    if metadata:
        header[METADATA_KEY] = {str(k): str(v) for k, v in metadata.items()}
    chunks: list[bytes] = []
    offset = 0
    for name, value in tensors.items():
        if name == METADATA_KEY:
            raise SafetensorsError(f"tensor name {METADATA_KEY!r} is reserved")
        array = np.asarray(value)
        tag = _tag_of(array)
        data = np.ascontiguousarray(array, dtype=DTYPES[tag]).tobytes()
        header[name] = {"dtype": tag, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def write(path: str | Path, tensors: Mapping[str, np.ndarray],
          metadata: Mapping[str, str] | None = None) -> None:
    """Write named arrays to a safetensors file (replacing it atomically)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(dumps(tensors, metadata))
    tmp.replace(path)


def loads(blob: bytes) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Parse safetensors bytes into (name -> array, metadata), validating the layout."""
    if len(blob) < 8:
        raise SafetensorsError("file shorter than the 8-byte header length")
    (hlen,) = struct.unpack("<Q", blob[:8])
    if hlen > min(len(blob) - 8, _MAX_HEADER):
        raise SafetensorsError(f"header length {hlen} exceeds the file size {len(blob)}")
    try:
        header = json.loads(blob[8:8 + hlen].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SafetensorsError(f"bad JSON header: {exc}") from None
    if not isinstance(header, dict):
        raise SafetensorsError("header is not a JSON object")
    metadata = header.pop(METADATA_KEY, None) or {}
    if not isinstance(metadata, dict):
        raise SafetensorsError(f"{METADATA_KEY} is not an object")
    data = memoryview(blob)[8 + hlen:]
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        tensors[name] = _parse_entry(name, info, data)
    return tensors, {str(k): str(v) for k, v in metadata.items()}


def _parse_entry(name: str, info: object, data: memoryview) -> np.ndarray:
    if not isinstance(info, dict):
        raise SafetensorsError(f"{name}: entry is not an object")
    tag, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if tag not in DTYPES:
        raise SafetensorsError(f"{name}: unsupported dtype {tag!r} (supported: {', '.join(DTYPES)})")
    if (not isinstance(shape, list)
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
        raise SafetensorsError(f"{name}: bad shape {shape!r}")
    if (not isinstance(offsets, list) or len(offsets) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)):
        raise SafetensorsError(f"{name}: bad data_offsets {offsets!r}")
    begin, end = offsets
    dtype = DTYPES[tag]
    count = int(np.prod(shape, dtype=np.int64))
    if not 0 <= begin <= end <= len(data):
        raise SafetensorsError(f"{name}: data_offsets {offsets} outside the {len(data)}-byte data")
    if end - begin != count * dtype.itemsize:
        raise SafetensorsError(f"{name}: {end - begin} bytes for {tag}{shape} "
                               f"(expected {count * dtype.itemsize})")
    array = np.frombuffer(data[begin:end], dtype=dtype).reshape(shape)
    return array.astype(dtype.newbyteorder("="), copy=True)


def read(path: str | Path) -> dict[str, np.ndarray]:
    """Read every tensor of a safetensors file (name -> native-endian array)."""
    return loads(Path(path).read_bytes())[0]


def read_metadata(path: str | Path) -> dict[str, str]:
    """Read the ``__metadata__`` map of a safetensors file (empty if none)."""
    return loads(Path(path).read_bytes())[1]
