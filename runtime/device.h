/* device.h — a GPU through the CUDA Driver API (runtime/cuda_api.h): the
 * device's primary context, memory, modules, launches, streams, events, and
 * the `kbc info` report.
 *
 * Before: nothing; the driver is loaded on first use.  Without a driver or a
 * GPU every call fails with the loader's message ("no CUDA driver: ...").
 * After: every handle made here is released by its own call:
 *   rt_device_open/close, rt_mem_alloc/free, rt_stream_create/destroy,
 *   rt_event_create/destroy, rt_module_load/unload (which also releases the
 *   module's rt_function handles).
 *
 * Contexts: rt_device_open retains the device's primary context — the one
 * PyTorch and the CUDA runtime use, so device pointers are shared — and
 * makes it current on the calling thread.  Every call that takes an
 * rt_device (or a module or function of one) first makes that context
 * current if it is not, so any thread may use an open device.
 *
 * Streams and events are the driver's own handles (CUstream / CUevent) as
 * void *: a stream from PyTorch (torch.cuda.current_stream().cuda_stream)
 * can be passed to rt_launch directly; NULL is the legacy default stream.
 * Device memory addresses are rt_dptr (CUdeviceptr).
 *
 * Thread safety: calls on different devices/modules are independent.
 * rt_launch may raise a function's dynamic shared memory limit
 * (cuFuncSetAttribute) on first use of a larger size; launching the same
 * rt_function from several threads with growing sizes at once is not
 * supported.  rt_device_close/rt_module_unload must not race with uses. */
#ifndef KBC_RUNTIME_DEVICE_H
#define KBC_RUNTIME_DEVICE_H

#include <stddef.h>

#include "rt_common.h"
#include "support/buf.h"

typedef unsigned long long rt_dptr;
typedef struct rt_device rt_device;
typedef struct rt_module rt_module;
typedef struct rt_function rt_function;

typedef struct {
  int ordinal;
  char name[256];
  int cc_major, cc_minor;      /* compute capability */
  int sm_count;
  int max_threads_per_block;
  int smem_per_block_optin;    /* bytes: the most a block may use after opting in */
  int smem_per_sm;             /* bytes */
  int regs_per_sm;
  int l2_bytes;
  int cooperative_launch;      /* 1 when supported */
  size_t total_mem;            /* bytes */
  int driver_version;          /* e.g. 13000 for CUDA 13.0 */
} rt_device_props;

/* Device discovery; no context is created. */
int rt_device_count(int *count, rt_err *err);
int rt_device_query(int ordinal, rt_device_props *props, rt_err *err);

int rt_device_open(int ordinal, rt_device **out, rt_err *err);
void rt_device_close(rt_device *dev); /* NULL is allowed */
const rt_device_props *rt_device_info(const rt_device *dev);
/* The target for "auto" on this device (see rt_arch_of_cc), e.g. "sm_90a". */
void rt_arch_of_device(const rt_device *dev, char *buf, size_t size);
/* Makes dev's context current on the calling thread (done implicitly by
 * every call below). */
int rt_device_make_current(rt_device *dev, rt_err *err);
/* cuCtxSynchronize: waits for all work; reports asynchronous kernel faults. */
int rt_device_sync(rt_device *dev, rt_err *err);

/* Memory.  Sets and copies run on the legacy default stream and are
 * complete when they return; they do not wait for work on other streams
 * (sync such a stream before reading what its kernels wrote). */
int rt_mem_alloc(rt_device *dev, size_t bytes, rt_dptr *out, rt_err *err);
int rt_mem_free(rt_device *dev, rt_dptr p, rt_err *err); /* 0 is allowed */
int rt_memset_d8(rt_device *dev, rt_dptr p, unsigned char value, size_t bytes, rt_err *err);
int rt_memset_d32(rt_device *dev, rt_dptr p, unsigned int value, size_t count, rt_err *err);
int rt_memcpy_htod(rt_device *dev, rt_dptr dst, const void *src, size_t bytes, rt_err *err);
int rt_memcpy_dtoh(rt_device *dev, void *dst, rt_dptr src, size_t bytes, rt_err *err);
int rt_memcpy_dtod(rt_device *dev, rt_dptr dst, rt_dptr src, size_t bytes, rt_err *err);

/* Streams: created non-blocking (no implicit sync with the legacy stream). */
int rt_stream_create(rt_device *dev, void **stream, rt_err *err);
int rt_stream_destroy(rt_device *dev, void *stream, rt_err *err);
int rt_stream_sync(rt_device *dev, void *stream, rt_err *err);

/* Events with timing. */
int rt_event_create(rt_device *dev, void **event, rt_err *err);
int rt_event_destroy(rt_device *dev, void *event, rt_err *err);
int rt_event_record(rt_device *dev, void *event, void *stream, rt_err *err);
int rt_event_sync(rt_device *dev, void *event, rt_err *err);
int rt_event_elapsed_ms(rt_device *dev, void *start, void *end, float *ms, rt_err *err);

/* Modules from a cubin (or NUL-terminated PTX, JIT-compiled by the driver;
 * its error log is part of the message). */
int rt_module_load(rt_device *dev, const rt_blob *image, rt_module **out, rt_err *err);
void rt_module_unload(rt_module *mod); /* NULL is allowed; frees its functions */
/* A kernel by its (mangled, or extern "C") name; owned by the module. */
int rt_module_function(rt_module *mod, const char *name, rt_function **out, rt_err *err);

typedef struct {
  int registers;
  int static_smem;             /* bytes */
  int local_bytes;             /* per thread: stack and spills */
  int max_threads_per_block;   /* the most this kernel can launch with */
  int binary_version;          /* e.g. 90 */
} rt_function_attrs;
int rt_function_get_attrs(rt_function *fn, rt_function_attrs *out, rt_err *err);
const char *rt_function_name(const rt_function *fn);
/* Resident blocks per SM for a block size and dynamic shared memory. */
int rt_occupancy(rt_function *fn, int block_threads, size_t smem, int *blocks_per_sm, rt_err *err);

/* CUDA graphs: capture the launches queued on a (non-default) stream,
 * then replay them with one call.  rt_graph_capture_end instantiates the
 * captured graph into *out (release with rt_graph_destroy), keeping its
 * kernel nodes in launch order where the capture is a chain of kernels
 * (one stream's launches): rt_graph_kernels counts them (-1 where it is
 * not, or the driver cannot change a node), and rt_graph_set_kernel gives
 * node i another launch of the same shape of work — new arguments, taken
 * by value as a launch takes them — for the graph's later launches
 * (cuGraphExecKernelNodeSetParams: launches already queued keep theirs). */
typedef struct rt_graph rt_graph;
int rt_graph_supported(rt_device *dev);
int rt_graph_capture_begin(rt_device *dev, void *stream, rt_err *err);
int rt_graph_capture_end(rt_device *dev, void *stream, rt_graph **out, rt_err *err);
int rt_graph_launch(rt_graph *g, void *stream, rt_err *err);
int rt_graph_kernels(const rt_graph *g);
int rt_graph_set_kernel(rt_graph *g, int i, rt_function *fn, const unsigned grid[3], const unsigned block[3],
                        size_t smem, void **args, rt_err *err);
void rt_graph_destroy(rt_graph *g); /* NULL: nothing */
/* A capture over several streams: whether the driver can (stream waits
 * and the capture's nodes asked for), an event without timing for one
 * stream to wait on (rt_stream_wait_event: the stream's later work waits
 * for what was queued on the other before the event's record), the node a
 * capturing stream last added (*node; its single dependency), and the
 * capture ended with its kernel nodes given in launch order (nodes[0..n),
 * for rt_graph_set_kernel) instead of walked as a chain. */
int rt_graph_branches_supported(rt_device *dev);
int rt_event_create_untimed(rt_device *dev, void **event, rt_err *err);
int rt_stream_wait_event(rt_device *dev, void *stream, void *event, rt_err *err);
int rt_graph_capture_last(rt_device *dev, void *stream, void **node, rt_err *err);
int rt_graph_capture_end_nodes(rt_device *dev, void *stream, void *const *nodes, int n, rt_graph **out, rt_err *err);
/* 1 when a caller is capturing stream into a graph of its own (torch's
 * CUDA graphs, torch.compile's reduce-overhead mode), where no memory may
 * be allocated and the program's launches go into the caller's graph;
 * 0 when not, or when the driver cannot tell. */
int rt_stream_capturing(rt_device *dev, void *stream);

/* Launches fn with grid x block threads and smem bytes of dynamic shared
 * memory on stream (NULL: legacy default stream); args as for
 * cuLaunchKernel: an array of pointers to each argument's value.  Above
 * 48 KB of dynamic shared memory, the function's limit is raised first
 * (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).  Configurations the
 * device or the kernel cannot run are errors naming the kernel and the
 * limit.  Kernel faults surface later, from a sync call. */
int rt_launch(rt_function *fn, const unsigned grid[3], const unsigned block[3], size_t smem,
              void *stream, void **args, rt_err *err);

/* Extended launches through cuLaunchKernelEx: thread-block clusters
 * (sm_90+), cooperative launch (grid-wide sync), programmatic dependent
 * launch (PDL).  Zero-initialized options mean a plain launch. */
typedef struct {
  unsigned cluster[3];         /* all 0: no cluster */
  int cooperative;
  int programmatic_serialization;
  int non_portable_cluster;    /* allow clusters above 8 CTAs (sm_90: up to 16) */
} rt_launch_opts;
int rt_launch_ex(rt_function *fn, const unsigned grid[3], const unsigned block[3], size_t smem,
                 void *stream, void **args, const rt_launch_opts *opts, rt_err *err);

/* The `kbc info` report: versions, NVRTC archs, driver, devices, cache. */
void rt_info(const char *kbc_version, kbc_buf *out);
/* The same as one JSON object (info_json.c; `kbc info --json`). */
void rt_info_json(const char *kbc_version, kbc_buf *out);

#endif
