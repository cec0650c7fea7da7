/* rt_err.h — the runtime's one error type: a kind and a message.
 *
 * Before: a runtime call that can fail takes an `rt_err *err` (may be
 * NULL).  After a failure: err->kind says what went wrong — set where the
 * error is raised, never recovered by reading the message — and err->msg
 * holds one message (possibly followed by extra lines: an NVRTC log).
 * After a success *err is left alone.  The public API maps a kind to a
 * kbc_status in one place (api/api.c, status_of); the CLI prints the
 * message.  A zeroed rt_err is empty (RT_ERR_NONE, "") and valid;
 * rt_err_free releases it.  Thread safety: an rt_err is the caller's. */
#ifndef KBC_RUNTIME_RT_ERR_H
#define KBC_RUNTIME_RT_ERR_H

#include "support/buf.h"

/* The kinds, each with the kbc_status (include/kbc.h) it becomes. */
#define RT_ERR_KINDS(X)                                                                       \
  X(NONE, "no error")                 /* (KBC_OK; never reported) */                       \
  X(ARGUMENT, "bad argument")         /* a bad request: unknown target, bad tensor list */  \
  X(IO, "I/O error")                  /* a file, directory, pipe or process: strerror */    \
  X(FORMAT, "malformed file")         /* a file's contents are not what they must be */     \
  X(NO_DEVICE, "no device")           /* no CUDA driver, no such GPU, no NVRTC library */   \
  X(CUDA, "CUDA error")               /* a Driver API or NVRTC call failed (compiles too) */ \
  X(MEMORY, "out of memory")          /* host memory */                                      \
  X(INTERNAL, "internal error")       /* a broken invariant of kbc */

typedef enum {
#define X(id, text) RT_ERR_##id,
  RT_ERR_KINDS(X)
#undef X
} rt_err_kind;

typedef struct {
  rt_err_kind kind;
  kbc_buf msg;
} rt_err;

/* Replaces *err (when not NULL) with kind and the formatted message;
 * returns -1. */
int rt_fail(rt_err *err, rt_err_kind kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Replaces *err (when not NULL) with a copy of *from (kind and message);
 * returns -1. */
int rt_err_copy(rt_err *err, const rt_err *from);
/* The message ("" when none). */
const char *rt_err_msg(const rt_err *err);
/* The kind's name for messages ("CUDA error"). */
const char *rt_err_kind_name(rt_err_kind kind);
/* Back to RT_ERR_NONE and "", keeping the storage. */
void rt_err_clear(rt_err *err);
void rt_err_free(rt_err *err);

#endif
