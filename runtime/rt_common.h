/* rt_common.h — small pieces shared by the runtime layer (runtime/cuda_api,
 * nvrtc, cache, device): byte blobs, KBC_DEBUG logging, reading a file;
 * with the error type (rt_err.h) and writing files (rt_file.h).
 *
 * Conventions of the whole runtime layer:
 *   - a function that can fail returns 0 on success and -1 on failure;
 *   - on failure it replaces the caller's `rt_err *err` (which may be
 *     NULL; rt_err.h) with the error's kind, set where it is raised, and
 *     one message, possibly followed by extra lines (an NVRTC log); on
 *     success it leaves *err alone;
 *   - nothing prints except rt_debug(), which writes "kbc: ..." lines to
 *     stderr when KBC_DEBUG (1..4) asks for them; nothing exits.
 * Thread safety: the helpers here are safe to call from any thread. */
#ifndef KBC_RUNTIME_RT_COMMON_H
#define KBC_RUNTIME_RT_COMMON_H

#include <stddef.h>
#include <sys/types.h>

#include "rt_err.h"
#include "rt_file.h"
#include "support/buf.h"

/* An owned byte array.  A zeroed rt_blob is empty and valid. */
typedef struct {
  unsigned char *data;
  size_t len;
} rt_blob;

void rt_blob_free(rt_blob *b);
/* Replaces b's contents with a copy of n bytes (plus a hidden NUL, so text
 * blobs such as PTX can be used as C strings). */
void rt_blob_set(rt_blob *b, const void *p, size_t n);

/* KBC_DEBUG as a number 0..4 (read on every call: cheap, and tests may
 * change it). */
int rt_debug_level(void);
/* Writes "kbc: <message>\n" to stderr when level <= rt_debug_level(). */
void rt_debug(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Empties a buffer, keeping its storage. */
void rt_buf_clear(kbc_buf *b);

/* Reads a whole regular file of at most max_bytes into out. */
int rt_read_file(const char *path, size_t max_bytes, rt_blob *out, rt_err *err);

/* Monotonic clock in milliseconds. */
double rt_now_ms(void);

#endif
