/* cache.h — compile generated CUDA C to a cubin through the on-disk kernel
 * cache: the one entry point the code generator and the CLI use
 * (rt_compile), plus the cache's pieces for tests and `kbc info`.
 *
 * Cache directory: $KBC_CACHE_DIR, else $XDG_CACHE_HOME/kbc, else
 * $HOME/.cache/kbc; created on first use (mkdir -p, mode 0700).
 *
 * Key: SHA-256, first 128 bits as 32 hex digits, over (each length-prefixed)
 * a format tag, the kbc version, the NVRTC version, the arch, the full
 * NVRTC option list (rt_nvrtc_options: defaults, -lineinfo under KBC_DEBUG,
 * extra options), the program name and the source.
 *
 * Entry <dir>/<key>.cubin, written atomically (temporary file in the
 * directory, fsync, rename), in host byte order:
 *   "KBCCUBIN"  u32 format version (1)  u32 0
 *   char key[32]  u64 payload length  u8 sha256(payload)[32]
 *   payload: u64 n, cubin[n]; u64 n, ptx[n] (n = UINT64_MAX: no PTX);
 *            u64 n, resources[n] (rt_resources_serialize text)
 * A short, corrupt or mismatched entry (bad magic, version, key, length or
 * checksum) is reported at KBC_DEBUG >= 1, deleted and rebuilt.
 *
 * Environment:
 *   KBC_CACHE_DIR       the directory (see above)
 *   KBC_ALWAYS_COMPILE  =1: never read the cache (entries are still written)
 *   KBC_DUMP_DIR        write <dir>/<name>-<key>.cu before compiling and
 *                       .cubin / .ptx after, hit or miss
 *   KBC_DEBUG           1: hits, misses, compile times; 2: + resources per
 *                       kernel; 3: + NVRTC options and logs; 4: + sources
 * An unusable cache directory (cannot be created, written or read) never
 * fails a compilation: kbc compiles without the cache and says why at
 * KBC_DEBUG >= 1.  Unwritable dump directories are likewise only reported.
 *
 * Thread safety: rt_compile may run concurrently in threads and processes;
 * atomic renames keep every entry whole (the last writer wins). */
#ifndef KBC_RUNTIME_CACHE_H
#define KBC_RUNTIME_CACHE_H

#include <stddef.h>

#include "nvrtc.h"
#include "rt_common.h"
#include "support/buf.h"

enum { RT_KEY_HEX = 32 };

typedef struct {
  const char *src;           /* generated CUDA C, self-contained */
  const char *name;          /* program name: diagnostics, dump file names */
  const char *arch;          /* resolved target, e.g. "sm_90a" (not "auto") */
  const char *const *opts;   /* extra NVRTC options (may be NULL when n_opts is 0) */
  int n_opts;
  const char *kbc_version;   /* part of the key: a new kbc never reads old entries */
  int want_ptx;              /* also produce (and cache) the PTX */
} rt_compile_req;

typedef struct {
  rt_blob cubin;
  rt_blob ptx;               /* empty unless want_ptx */
  rt_resources res;          /* per-kernel registers / spills, from ptxas */
  kbc_buf log;               /* the NVRTC log (empty on a cache hit) */
  char key[RT_KEY_HEX + 1];
  int from_cache;            /* 1: read from the cache, NVRTC not run */
  double compile_ms;         /* NVRTC time; 0 on a hit */
} rt_compiled;

/* Compiles req (or finds it in the cache).  On success *out (zeroed or
 * previously freed) holds the results; release them with rt_compiled_free.
 * On failure *out is empty and *err explains (NVRTC's log included). */
int rt_compile(const rt_compile_req *req, rt_compiled *out, rt_err *err);
void rt_compiled_free(rt_compiled *c);

/* SHA-256 over the n fields, each length-prefixed (NULL: a length of
 * UINT64_MAX and no bytes), as RT_KEY_HEX hex digits (its first 128 bits):
 * the cache's keys and the tune records' (runtime/tune.c). */
void rt_key_of_fields(const char *const *fields, int n, char key[RT_KEY_HEX + 1]);
/* The key of a request (needs NVRTC for its version). */
int rt_cache_key(const rt_compile_req *req, char key[RT_KEY_HEX + 1], rt_err *err);
/* The cache directory (see above), created if missing; -1 when none is usable. */
int rt_cache_dir(kbc_buf *dir, rt_err *err);
/* The same path without creating anything; -1 only when no variable is set. */
int rt_cache_dir_path(kbc_buf *dir, rt_err *err);
/* "<dir>/<key>.cubin" */
void rt_cache_entry_path(const char *dir, const char *key, kbc_buf *path);
/* Number of entries and their total size in bytes; -1 when dir is unreadable. */
int rt_cache_stats(const char *dir, long *entries, long long *bytes, rt_err *err);
/* Removes every entry (and stray temporary files) from dir. */
int rt_cache_clear(const char *dir, rt_err *err);

/* SHA-256 of n bytes, and as lowercase hex (65 bytes with the NUL). */
void rt_sha256(const void *data, size_t n, unsigned char digest[32]);
void rt_sha256_hex(const void *data, size_t n, char hex[65]);

#endif
