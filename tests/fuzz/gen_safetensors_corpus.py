#!/usr/bin/env python3
"""Writes the seed corpus of tests/fuzz/fuzz_safetensors.c into
tests/fuzz/corpus/safetensors/ (small valid and invalid files, < 4 KB each).

Plain Python (struct + json), no torch: the valid seeds use the byte layout
of the reference writer (compact JSON, header padded with spaces to 8 bytes).
Rerun after editing; the output is deterministic.  The fuzz-<sha1> files next
to the seeds are inputs the fuzzer found (see tests/fuzz/fuzz_safetensors.c)."""
import json, os, struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "safetensors")
SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def raw(header: bytes, data: bytes = b"", n=None) -> bytes:
    return struct.pack("<Q", len(header) if n is None else n) + header + data


def file(tensors, meta=None, pad=True) -> bytes:
    """tensors: list of (name, dtype, shape, bytes), stored contiguously."""
    hdr, data = {}, b""
    if meta is not None:
        hdr["__metadata__"] = meta
    for name, dt, shape, b in tensors:
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(hdr, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return raw(h, data)


def t(name, dt, shape):
    n = 1
    for d in shape:
        n *= d
    return (name, dt, shape, bytes((i * 37 + 11) % 256 for i in range(n * SIZES[dt])))


def one(body: str, data: bytes = b"") -> bytes:
    return raw(('{"x":%s}' % body).encode(), data)


SEEDS = {
    # valid
    "ok_reference_attn": file([("attn.0", "F32", [1, 2, 3], struct.pack("<6f", 0, 1, 2, 3, 4, 5))]),
    "ok_empty": file([]),
    "ok_metadata": file([t("w", "F32", [2])], {"format": "pt", "note": "caf\u00e9"}),
    "ok_all_dtypes": file([t(d.lower(), d, [2, 3]) for d in SIZES]),
    "ok_scalar_and_zero_sized": file([t("s", "F64", []), t("z", "F32", [0, 3]), t("v", "I32", [2])]),
    "ok_escaped_names": raw('{"a\\"b\\\\c\\n\\u00e9\\ud83d\\ude00":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'.encode(), b"\x07"),
    "ok_whitespace": raw(b' {\n "x" : { "shape" : [ 2 ] , "dtype" : "I16" ,\t"data_offsets" : [ 0 , 4 ] }\r\n}   ', b"\x01\x00\xff\xff"),
    "ok_out_of_header_order": raw(b'{"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x01\x02"),
    "ok_rank8": one('{"dtype":"BF16","shape":[1,1,1,1,1,1,1,2],"data_offsets":[0,4]}', b"\x80\x3f\x00\xc0"),
    # invalid
    "bad_short": b"\x08\x00\x00",
    "bad_header_past_eof": raw(b"{}", n=1000),
    "bad_header_over_limit": raw(b"{}", n=100000001),
    "bad_not_object": raw(b"[1,2]"),
    "bad_json_trailing_comma": one('{"dtype":"U8","shape":[1],"data_offsets":[0,1],}', b"\x00"),
    "bad_json_garbage_after": raw(b"{} x"),
    "bad_unknown_dtype": one('{"dtype":"U16","shape":[1],"data_offsets":[0,2]}', b"\x00\x00"),
    "bad_rank9": one('{"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]}', b"\x00"),
    "bad_shape_overflow": one('{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}'),
    "bad_negative": one('{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}'),
    "bad_float": one('{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}', b"\x00"),
    "bad_mismatch": one('{"dtype":"F32","shape":[2,3],"data_offsets":[0,12]}', bytes(12)),
    "bad_out_of_buffer": one('{"dtype":"U8","shape":[4],"data_offsets":[0,4]}', bytes(3)),
    "bad_overlap": raw(b'{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}', bytes(6)),
    "bad_gap": raw(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', bytes(2)),
    "bad_trailing_bytes": one('{"dtype":"U8","shape":[1],"data_offsets":[0,1]}', bytes(3)),
    "bad_duplicate_name": raw(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', bytes(2)),
    "bad_empty_name": raw(b'{"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', bytes(1)),
    "bad_missing_field": one('{"dtype":"U8","shape":[1]}', bytes(1)),
    "bad_unknown_field": one('{"dtype":"U8","shape":[1],"data_offsets":[0,1],"strides":[1]}', bytes(1)),
    "bad_metadata_value": raw(b'{"__metadata__":{"k":1}}'),
    "bad_deep_nesting": raw(b'{"x":{"shape":' + b"[" * 2000 + b"}}"),
    "bad_utf8": raw(b'{"x\xff":{}}'),
    "bad_unpaired_surrogate": raw(b'{"x\\ud800":{}}'),
    "bad_nul_in_name": raw(b'{"a\\u0000":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', bytes(1)),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, b in SEEDS.items():
        assert len(b) < 4096, name
        with open(os.path.join(OUT, name + ".safetensors"), "wb") as f:
            f.write(b)
    print("wrote %d seeds to %s" % (len(SEEDS), OUT))


if __name__ == "__main__":
    main()
