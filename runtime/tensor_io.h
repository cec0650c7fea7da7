/* tensor_io.h — the tensor files of `kbc run --inputs/--outputs`:
 * safetensors (safetensors.h), NumPy's .npy (one array), .npz (an
 * uncompressed zip of .npy files, np.savez) and a directory of .npy files.
 *
 * Reading (rt_tensors_load): the format is found by content — the magic
 * bytes "\x93NUMPY" (.npy), "PK\x03\x04" (zip: .npz), a directory, or a
 * safetensors header (an 8-byte length, then '{') — never by the name.
 * Anything else is refused with a message naming what it looks like ("a
 * gzip file", "a Python pickle", "text", ...).  A .npy file's tensor is
 * named by the file's base name without ".npy"; an .npz member "x.npy" or a
 * directory's "x.npy" is tensor x.  Accepted .npy: versions 1.0, 2.0 and
 * 3.0, little-endian (or byte-order-free) dtypes f8 f4 f2 i8 i4 i2 i1 u1
 * b1, C order (a Fortran-ordered array of rank 2 or more is refused),
 * rank 0..8, the data exactly as long as the shape says.  Accepted .npz:
 * stored (uncompressed) members, each a .npy, CRC-32 checked; a compressed
 * member (np.savez_compressed) is refused as such.  Every rejection is one
 * line "PATH: problem" (a member: "PATH: member 'x.npy': problem") in *err:
 * RT_ERR_FORMAT for contents, RT_ERR_IO with strerror for the system's
 * errors, RT_ERR_MEMORY; nothing is printed, and memory is bounded by the
 * input's size.
 *
 * Writing (rt_tensors_save): the format the path names — ".safetensors",
 * ".npy" (exactly one tensor), ".npz", or a directory (a path ending in
 * '/' or naming an existing directory; created if missing) — and any other
 * extension is an error (RT_ERR_ARGUMENT) before anything is written.
 * Files are written atomically (rt_file.h); a directory's files each are,
 * after every one has been encoded, so a failure before the first write
 * leaves the directory as it was. */
#ifndef KBC_RUNTIME_TENSOR_IO_H
#define KBC_RUNTIME_TENSOR_IO_H

#include "rt_err.h"
#include "safetensors.h"

typedef enum { RT_TF_SAFETENSORS, RT_TF_NPY, RT_TF_NPZ, RT_TF_DIR } rt_tensor_format;

/* "safetensors", "npy", "npz", "directory". */
const char *rt_tensor_format_name(rt_tensor_format f);

/* Reads path in whatever supported format its content is; 0, or -1 with
 * *out = NULL and the message in *err. */
int rt_tensors_load(const char *path, rt_st_file **out, rt_err *err);
/* The same from bytes (a file's content; not a directory), named "<memory>". */
int rt_tensors_parse(const void *bytes, size_t len, rt_st_file **out, rt_err *err);

/* The format a path to write names; -1 (RT_ERR_ARGUMENT) for another extension. */
int rt_tensors_output_format(const char *path, rt_tensor_format *fmt, rt_err *err);
/* Writes the n tensors to path in that format (see above). */
int rt_tensors_save(const char *path, const rt_st_tensor *ts, int n, rt_err *err);

/* The encodings, into a malloc'ed *out (tests and the fuzz target). */
int rt_npy_encode(const rt_st_tensor *t, void **out, size_t *len, rt_err *err);
int rt_npz_encode(const rt_st_tensor *ts, int n, void **out, size_t *len, rt_err *err);

#endif
