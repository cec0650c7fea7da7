/* tensor_io_impl.h — private to tensor_io.c, npy.c and npz.c: the context
 * of messages ("FILE: problem", "FILE: member 'x.npy': problem") and the
 * per-format readers.  See tensor_io.h. */
#ifndef KBC_RUNTIME_TENSOR_IO_IMPL_H
#define KBC_RUNTIME_TENSOR_IO_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "rt_err.h"
#include "safetensors.h"

typedef struct {
  const char *file;   /* first in every message */
  const char *member; /* an .npz member or a directory's file, or NULL */
  rt_err *err;        /* may be NULL */
} rt_tensor_ctx;

/* Sets the message in context; returns -1. */
int rt_tio_fail(rt_tensor_ctx *x, rt_err_kind kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* One .npy file's bytes into t (name and data malloc'ed), named name. */
int rt_npy_parse(rt_tensor_ctx *x, const unsigned char *b, size_t n, const char *name, rt_st_tensor *t);
/* An .npz file's bytes into a file of its members' tensors. */
int rt_npz_parse(rt_tensor_ctx *x, const unsigned char *b, size_t n, rt_st_file **out);
/* CRC-32 (the zip's, IEEE 802.3). */
uint32_t rt_crc32(const unsigned char *p, size_t n);

#endif
