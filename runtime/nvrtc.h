/* nvrtc.h — CUDA C → cubin (and PTX) with NVRTC, loaded at run time with
 * dlopen (no link-time dependency), plus the register/spill report of each
 * compiled kernel.
 *
 * NVRTC is looked up, first hit wins: $KBC_NVRTC_LIB, libnvrtc.so.13,
 * libnvrtc.so, /usr/local/cuda/lib64/libnvrtc.so,
 * $CUDA_HOME/lib64/libnvrtc.so.  It needs no GPU and no driver.
 *
 * Before: nothing.  After the first call that needs NVRTC, the library stays
 * loaded for the life of the process (or the load error is remembered and
 * returned by every call).  Errors follow rt_common.h: 0 / -1 with one
 * message in *err; a failed compilation's message holds the full NVRTC log.
 *
 * Compilation options (one per line in rt_nvrtc_options, in this order):
 *   --gpu-architecture=<arch>  -std=c++17  -default-device
 *   --ptxas-options=-v         (ptxas prints the resources parsed below)
 *   -lineinfo                  (only when KBC_DEBUG >= 1)
 *   the caller's extra options
 * --use_fast_math is deliberately not a default (accuracy); a caller may
 * pass it.  NVRTC has no include path by default (see PERFORMANCE.md).
 *
 * PTX: compiling for a real arch sm_XX gives a cubin and, with NVRTC 13.0,
 * the PTX as well; where NVRTC does not return PTX for sm_XX, a second
 * compilation for compute_XX provides it.
 *
 * KBC_NVRTC_ISOLATE=1 runs each compilation in a forked child process that
 * sends its results back through a pipe, so that a crash inside NVRTC
 * (PERFORMANCE.md: a bad wgmma once killed the host) becomes an error
 * message ("NVRTC crashed ... (signal 11: Segmentation fault)").
 *
 * Thread safety: loading is thread-safe; NVRTC programs are per call, so
 * concurrent compilations are allowed (NVRTC itself is thread-safe).  The
 * isolated mode forks and should not be used while other threads hold
 * locks NVRTC might need. */
#ifndef KBC_RUNTIME_NVRTC_H
#define KBC_RUNTIME_NVRTC_H

#include <stddef.h>

#include "rt_common.h"
#include "support/buf.h"

/* Resource use of one kernel, as ptxas reported it; -1 where not reported. */
typedef struct {
  char *name;          /* entry point name as in the cubin (mangled unless extern "C") */
  int registers;       /* "Used N registers" */
  int barriers;        /* "used N barriers" */
  long stack_frame;    /* bytes, "N bytes stack frame" */
  long spill_stores;   /* bytes, "N bytes spill stores" */
  long spill_loads;    /* bytes, "N bytes spill loads" */
  long smem;           /* bytes of static shared memory, "N bytes smem" (0 when absent) */
} rt_kernel_resources;

typedef struct {
  rt_kernel_resources *k;
  int n;
} rt_resources;

void rt_resources_free(rt_resources *r);
/* Parses the ptxas -v lines of an NVRTC log (replacing *out's contents). */
void rt_resources_parse(const char *log, rt_resources *out);
/* The entry of a kernel by name, or NULL. */
const rt_kernel_resources *rt_resources_find(const rt_resources *r, const char *name);
/* Appends one line per kernel:
 * "NAME: 40 registers, 0 bytes spill stores, 0 bytes spill loads, 0 bytes stack, 4096 bytes smem\n" */
void rt_resources_format(const rt_resources *r, kbc_buf *out);
/* Tab-separated, one kernel per line: the cache's storage form. */
void rt_resources_serialize(const rt_resources *r, kbc_buf *out);
int rt_resources_deserialize(const char *text, size_t len, rt_resources *out);

/* 0 when NVRTC can be loaded, else -1 with the places tried in *err
 * (RT_ERR_NO_DEVICE). */
int rt_nvrtc_available(rt_err *err);
/* The path or name that was loaded, or NULL. */
const char *rt_nvrtc_lib_name(void);
int rt_nvrtc_version(int *major, int *minor, rt_err *err);
/* The SM numbers NVRTC can target (75 80 86 ... for sm_75 ...); returns
 * their count (at most max are stored) or -1. */
int rt_nvrtc_supported_archs(int *archs, int max, rt_err *err);

/* The targets kbc generates code for, NULL-terminated:
 * sm_80 sm_86 sm_89 sm_90 sm_90a. */
extern const char *const rt_kbc_archs[];
/* 0 when arch is "sm_<N>" or "sm_<N>a"/"sm_<N>f" with N among NVRTC's
 * supported archs; otherwise -1 with a message naming what is supported
 * (RT_ERR_ARGUMENT).
 * "auto" is not an arch here: resolve it from the device first. */
int rt_arch_check(const char *arch, rt_err *err);
/* The arch for a compute capability: "sm_90a" for 9.0 (the arch-specific
 * variant, so wgmma/setmaxnreg are available; the cubin then runs only on
 * 9.0 devices, which is what "auto" means), "sm_<major><minor>" otherwise. */
void rt_arch_of_cc(int major, int minor, char *buf, size_t size);

/* The full option list for a compilation, one option per line (see the top
 * comment); what is hashed into cache keys.  -1 when an extra option
 * contains a newline. */
int rt_nvrtc_options(const char *arch, const char *const *extra, int n_extra, kbc_buf *out,
                     rt_err *err);

/* Compiles src (a self-contained CUDA C translation unit) named name (used
 * in diagnostics as "<name>.cu") for arch.  On success *cubin holds the
 * cubin; *ptx (when ptx is not NULL) the PTX text; *res (when not NULL) the
 * per-kernel resources; *log (when not NULL) the NVRTC log.  On failure
 * nothing is stored and *err holds the failing call, NVRTC's error and the
 * full log (RT_ERR_CUDA; RT_ERR_NO_DEVICE without NVRTC), e.g.
 *   "NVRTC failed to compile vadd for sm_90: NVRTC_ERROR_COMPILATION\n
 *    vadd.cu(4): error: identifier \"x\" is undefined\n..." */
int rt_nvrtc_compile(const char *src, const char *name, const char *arch,
                     const char *const *extra_opts, int n_extra, rt_blob *cubin, rt_blob *ptx,
                     rt_resources *res, kbc_buf *log, rt_err *err);

#endif
