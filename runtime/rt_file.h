/* rt_file.h — files for the whole of kbc: reading one whole, creating
 * directories, and the one way a file is written — atomically.
 *
 * Before: paths.  After a write: either path holds exactly the new bytes
 * and the rename is durable, or (any failure) path is untouched, no
 * temporary is left behind, and *err (rt_err.h) names what failed with
 * strerror.  Used by the kernel cache and KBC_DUMP_DIR (cache.c), the
 * safetensors writer (`kbc run --outputs`) and `kbc compile -o`.
 * Thread safety: safe from any thread; concurrent writers of one path each
 * write their own temporary and the last rename wins. */
#ifndef KBC_RUNTIME_RT_FILE_H
#define KBC_RUNTIME_RT_FILE_H

#include <stddef.h>
#include <sys/types.h>

#include "rt_err.h"

/* A piece of the bytes to write. */
typedef struct {
  const void *data;
  size_t len;
} rt_span;

/* Writes the n parts, in order, to path atomically:
 *   1. a new temporary "DIR/.BASE.tmp-PID-N" in path's own directory (so
 *      the rename cannot cross file systems), mode 0666 less the umask;
 *   2. every byte written, fsync, close;
 *   3. rename over path (a symlink at path is replaced, not its target);
 *   4. fsync of the directory, so that the rename survives a crash (where
 *      the file system cannot sync directories — EINVAL, ENOTSUP — this
 *      step is skipped).
 * On a failure in 1-3 the temporary is removed and path is untouched; a
 * failure in 4 leaves the complete new file and is still reported.  Every
 * message starts with path: "out.cu: cannot create a temporary file in
 * 'dir': Permission denied" (RT_ERR_IO; RT_ERR_ARGUMENT for a path that
 * ends in '/', RT_ERR_MEMORY). */
int rt_write_parts_atomic(const char *path, const rt_span *parts, int n, rt_err *err);
/* The same for one part. */
int rt_write_file_atomic(const char *path, const void *data, size_t len, rt_err *err);

/* mkdir -p with the given mode for the directories it creates. */
int rt_mkdir_p(const char *path, mode_t mode, rt_err *err);

#endif
