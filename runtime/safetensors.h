/* safetensors.h — read and write safetensors files, the tensor container of
 * `kbc run --inputs/--outputs` and of the PyTorch scripts around kbc.
 *
 * The format: an 8-byte little-endian u64 N, then N bytes of UTF-8 JSON
 *   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}, ...,
 *    "__metadata__": {"key": "value", ...}}
 * (possibly padded with trailing spaces), then the data buffer.  Offsets are
 * relative to the buffer; data is little-endian and row-major.
 *
 * Reading is strict, like the reference (Rust) implementation, and every
 * rejection is a one-line message "FILE: problem" (naming the tensor where
 * there is one) in the caller's rt_err (runtime/rt_err.h: RT_ERR_FORMAT for
 * the file's contents, RT_ERR_IO for the system's errors, with strerror,
 * RT_ERR_MEMORY); nothing is printed, nothing aborts, and memory use is
 * bounded by the size of the input.  Accepted:
 *   - a header of at most RT_ST_MAX_HEADER bytes holding one JSON object
 *     (JSON whitespace, including the writers' padding, may surround it);
 *   - per tensor exactly the fields dtype, shape and data_offsets — an
 *     unknown field is an error, not ignored, so that a future field that
 *     changes the meaning of the bytes is never silently misread;
 *   - an optional "__metadata__" object of string values;
 *   - shapes of rank 0..RT_ST_MAX_RANK of non-negative integers whose
 *     non-zero extents multiply, times the dtype size, to at most INT64_MAX;
 *   - data_offsets equal to shape x dtype size; the non-empty tensors must
 *     tile the buffer exactly (no overlap, no gap, no trailing bytes);
 *     zero-sized tensors only need their offsets inside the buffer.
 * Names are unique, non-empty UTF-8 without NUL characters.
 *
 * Writing is atomic (see rt_st_save) and emits the byte layout of the
 * reference implementation: compact JSON, "__metadata__" first when present,
 * tensors in the given order with contiguous offsets, the header padded
 * with spaces to a multiple of 8 bytes. */
#ifndef KBC_RUNTIME_SAFETENSORS_H
#define KBC_RUNTIME_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "rt_err.h"

typedef enum {
  RT_DT_F64,
  RT_DT_F32,
  RT_DT_F16,
  RT_DT_BF16,
  RT_DT_I64,
  RT_DT_I32,
  RT_DT_I16,
  RT_DT_I8,
  RT_DT_U8,
  RT_DT_BOOL,
} rt_dtype;

enum { RT_ST_MAX_RANK = 8 };
enum { RT_ST_MAX_HEADER = 100000000 }; /* bytes, as in the reference reader */

typedef struct {
  char *name;
  rt_dtype dtype;
  int rank; /* 0 for a scalar */
  int64_t shape[RT_ST_MAX_RANK];
  void *data; /* loaded: never NULL, aligned for any dtype */
  size_t nbytes;
} rt_st_tensor;

/* A loaded file; owns its names, data and metadata. */
typedef struct rt_st_file rt_st_file;

/* Both return 0, or -1 with *out = NULL and the error in *err (which may be
 * NULL).  rt_st_parse copies what it keeps and names the
 * input "<memory>" in messages. */
int rt_st_load(const char *path, rt_st_file **out, rt_err *err);
int rt_st_parse(const void *bytes, size_t len, rt_st_file **out, rt_err *err);
void rt_st_free(rt_st_file *f); /* NULL is fine */
/* A file made of tensors read elsewhere (runtime/tensor_io.c: .npy, .npz,
 * a directory): takes ownership of every ts[i].name and ts[i].data
 * (malloc'ed; also on failure) and of nothing else; names must be unique
 * and non-empty ("FILE: duplicate tensor name 'x'", file naming the
 * source).  Tensors keep the given order. */
int rt_st_adopt(const char *file, rt_st_tensor *ts, int n, rt_st_file **out, rt_err *err);

/* Tensors are numbered in the order of their data in the file (their
 * data_offsets), zero-sized tensors at the same offset in header order.
 * Files written by rt_st_save therefore come back in the order given. */
int rt_st_count(const rt_st_file *f);
const rt_st_tensor *rt_st_get(const rt_st_file *f, int i); /* NULL if out of range */
const rt_st_tensor *rt_st_find(const rt_st_file *f, const char *name); /* NULL if absent */

/* "__metadata__" entries, in header order. */
int rt_st_meta_count(const rt_st_file *f);
int rt_st_meta_get(const rt_st_file *f, int i, const char **key, const char **value);
const char *rt_st_meta_find(const rt_st_file *f, const char *key); /* NULL if absent */

/* Writes atomically (rt_write_parts_atomic, rt_file.h): a temporary file
 * in the same directory, fsync, rename over path (replacing a symlink at
 * path, not its target), fsync of the directory.  On any error the
 * temporary is removed and an existing file at path is untouched.  Every tensor needs a unique, non-empty UTF-8 name
 * other than "__metadata__", a valid dtype, rank 0..8, extents >= 0, nbytes
 * equal to shape x dtype size, and data (may be NULL when nbytes is 0). */
int rt_st_save(const char *path, const rt_st_tensor *tensors, int n, rt_err *err);
/* The same with nmeta "__metadata__" entries (unique UTF-8 keys). */
int rt_st_save_meta(const char *path, const rt_st_tensor *tensors, int n,
                    const char *const *meta_keys, const char *const *meta_values, int nmeta,
                    rt_err *err);
/* The bytes rt_st_save_meta would write, into a malloc'ed *out. */
int rt_st_encode(const rt_st_tensor *tensors, int n, const char *const *meta_keys,
                 const char *const *meta_values, int nmeta, void **out, size_t *outlen,
                 rt_err *err);

const char *rt_dtype_name(rt_dtype t); /* "F32" ...; "?" if not a dtype */
size_t rt_dtype_size(rt_dtype t);      /* bytes per element; 0 if not a dtype */
int rt_dtype_parse(const char *s, rt_dtype *out); /* 0 ok, -1 unknown */

/* Elements of t: the product of its shape (1 for a scalar). */
int64_t rt_st_numel(const rt_st_tensor *t);
/* Converts the nbytes / dtype size elements of t, of any dtype, to double
 * (BOOL as 0/1); 0 ok, -1 if t's dtype is invalid or nbytes not a multiple
 * of its size.  Integers beyond 2^53 round. */
int rt_st_to_f64(const rt_st_tensor *t, double *out);
/* Fills t->data (nbytes / dtype size elements) from doubles, rounding to
 * nearest; t must be F64 or F32 (else -1). */
int rt_st_from_f64(rt_st_tensor *t, const double *in);

#endif
