#!/usr/bin/env python3
"""gen_tensors_corpus.py [DIR] — seeds for fuzz_tensors (tests/fuzz/corpus/tensors).

Valid and broken .npy and .npz files, and files of other kinds, written with
the standard library only (struct, zipfile), so that numpy is not needed."""
import io
import json
import os
import struct
import sys
import zipfile

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "tensors")
os.makedirs(out, exist_ok=True)


def npy(descr, shape, data, fortran=False, version=1):
    d = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, repr(tuple(shape)))
    pre = 10 if version == 1 else 12
    pad = (64 - (pre + len(d) + 1) % 64) % 64
    h = (d + " " * pad + "\n").encode()
    ln = struct.pack("<H", len(h)) if version == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([version, 0]) + ln + h + data


def npz(members, method=zipfile.ZIP_STORED):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", method) as z:
        for name, data in members:
            z.writestr(name, data)
    return b.getvalue()


f32_23 = npy("<f4", (2, 3), struct.pack("<6f", *range(6)))
seeds = {
    "f32_2x3.npy": f32_23,
    "f64_scalar.npy": npy("<f8", (), struct.pack("<d", 2.5)),
    "f16_v2.npy": npy("<f2", (3,), b"\x00\x3c\x00\x40\x00\xc0", version=2),
    "bool_v3.npy": npy("|b1", (2, 2), b"\x01\x00\x00\x01", version=3),
    "u8_empty.npy": npy("|u1", (0, 4), b""),
    "i64_fortran_vector.npy": npy("<i8", (2,), struct.pack("<2q", -1, 7), fortran=True),
    "bad_big_endian.npy": npy(">f4", (1,), b"\x3f\x80\x00\x00"),
    "bad_fortran_matrix.npy": npy("<f4", (2, 2), bytes(16), fortran=True),
    "bad_truncated_data.npy": f32_23[:-5],
    "bad_trailing_data.npy": f32_23 + b"\x00",
    "bad_header_not_dict.npy": b"\x93NUMPY\x01\x00\x08\x00[1, 2]\n ",
    "bad_header_past_eof.npy": b"\x93NUMPY\x01\x00\xff\x7f{'descr'",
    "bad_structured.npy": npy("<f4", (1,), bytes(4)).replace(b"'<f4'", b"[('a', '<f4')]"[:5]),
    "bad_version.npy": b"\x93NUMPY\x09\x00" + f32_23[8:],
    "two.npz": npz([("x.npy", f32_23), ("y.npy", npy("<f8", (), struct.pack("<d", 1.0)))]),
    "empty.npz": npz([]),
    "bad_compressed.npz": npz([("x.npy", f32_23)], zipfile.ZIP_DEFLATED),
    "bad_torch_pt.npz": npz([("archive/data.pkl", b"\x80\x02}q\x00.")]),
    "bad_duplicate.npz": npz([("x.npy", f32_23), ("x.npy", f32_23)]),
    "bad_truncated.npz": npz([("x.npy", f32_23)])[:60],
    "gzip.bin": b"\x1f\x8b\x08\x00" + bytes(16),
    "pickle.bin": b"\x80\x02}q\x00.",
    "text.txt": b"not a tensor file, just some words\n",
    "empty.bin": b"",
}
bad_crc = bytearray(npz([("x.npy", f32_23)]))
bad_crc[len(bad_crc) // 2] ^= 0xFF
seeds["bad_crc.npz"] = bytes(bad_crc)
h = json.dumps({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
h += b" " * (-len(h) % 8)
seeds["small.safetensors"] = struct.pack("<Q", len(h)) + h + struct.pack("<2f", 1, 2)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print(f"wrote {len(seeds)} seeds to {out}")
