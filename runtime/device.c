/* device.c — see device.h.  Sections: devices and contexts; memory;
 * streams and events; modules and functions; launches; rt_info. */
#include "device.h"

#include "cache.h"
#include "cuda_api.h"
#include "nvrtc.h"
#include "special.h"
#include "support/env.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rt_device {
  const rt_cuda_api *cu;
  CUdevice dev;
  CUcontext ctx;  /* the retained primary context */
  CUcontext prev; /* current on the opening thread before rt_device_open */
  rt_device_props props;
};

struct rt_function {
  rt_function *next;
  rt_module *mod;
  CUfunction f;
  char *name;
  rt_function_attrs attrs;
  int dyn_smem_limit; /* the MAX_DYNAMIC_SHARED_SIZE_BYTES currently set */
};

struct rt_module {
  rt_device *dev;
  CUmodule m;
  rt_function *fns;
};

enum { DEFAULT_DYN_SMEM = 48 * 1024 };

/* Checks a driver call made for dev, naming it in the message. */
#define CHECK(dev, call, what) rt_cu_check((dev)->cu->call, what, err)

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (!p) {
    fputs("kbc: out of memory\n", stderr);
    abort();
  }
  return p;
}

/* ---- devices and contexts ---------------------------------------------------- */

int rt_device_count(int *count, rt_err *err) {
  const rt_cuda_api *cu = rt_cuda(err);
  *count = 0;
  if (!cu) return -1;
  return rt_cu_check(cu->cuDeviceGetCount(count), "cuDeviceGetCount", err);
}

int rt_device_query(int ordinal, rt_device_props *p, rt_err *err) {
  const rt_cuda_api *cu = rt_cuda(err);
  if (!cu) return -1;
  int count = 0;
  if (rt_cu_check(cu->cuDeviceGetCount(&count), "cuDeviceGetCount", err) < 0) return -1;
  if (ordinal < 0 || ordinal >= count)
    return rt_fail(err, RT_ERR_NO_DEVICE, "no CUDA device %d: %d device%s present", ordinal, count, count == 1 ? "" : "s");
  CUdevice d;
  if (rt_cu_check(cu->cuDeviceGet(&d, ordinal), "cuDeviceGet", err) < 0) return -1;
  memset(p, 0, sizeof *p);
  p->ordinal = ordinal;
  if (rt_cu_check(cu->cuDeviceGetName(p->name, (int)sizeof p->name, d), "cuDeviceGetName", err) < 0 ||
      rt_cu_check(cu->cuDeviceTotalMem(&p->total_mem, d), "cuDeviceTotalMem_v2", err) < 0 ||
      rt_cu_check(cu->cuDriverGetVersion(&p->driver_version), "cuDriverGetVersion", err) < 0)
    return -1;
  static const struct {
    int attr;
    size_t offset;
    const char *what;
  } attrs[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, offsetof(rt_device_props, cc_major), "COMPUTE_CAPABILITY_MAJOR"},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, offsetof(rt_device_props, cc_minor), "COMPUTE_CAPABILITY_MINOR"},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, offsetof(rt_device_props, sm_count), "MULTIPROCESSOR_COUNT"},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(rt_device_props, max_threads_per_block), "MAX_THREADS_PER_BLOCK"},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, offsetof(rt_device_props, smem_per_block_optin), "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, offsetof(rt_device_props, smem_per_sm), "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, offsetof(rt_device_props, regs_per_sm), "MAX_REGISTERS_PER_MULTIPROCESSOR"},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, offsetof(rt_device_props, l2_bytes), "L2_CACHE_SIZE"},
      {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, offsetof(rt_device_props, cooperative_launch), "COOPERATIVE_LAUNCH"},
  };
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
    int v = 0;
    CUresult r = cu->cuDeviceGetAttribute(&v, attrs[i].attr, d);
    if (r != CUDA_SUCCESS) {
      kbc_buf call = {0};
      kbc_buf_printf(&call, "cuDeviceGetAttribute(%s)", attrs[i].what);
      rt_cu_check(r, call.data, err);
      kbc_buf_free(&call);
      return -1;
    }
    memcpy((char *)p + attrs[i].offset, &v, sizeof v);
  }
  return 0;
}

int rt_device_make_current(rt_device *dev, rt_err *err) {
  CUcontext cur = NULL;
  if (dev->cu->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == dev->ctx) return 0;
  return CHECK(dev, cuCtxSetCurrent(dev->ctx), "cuCtxSetCurrent");
}

int rt_device_open(int ordinal, rt_device **out, rt_err *err) {
  *out = NULL;
  rt_device_props props;
  if (rt_device_query(ordinal, &props, err) < 0) return -1;
  rt_device *dev = xcalloc(1, sizeof *dev);
  dev->cu = rt_cuda(err);
  dev->props = props;
  if (CHECK(dev, cuDeviceGet(&dev->dev, ordinal), "cuDeviceGet") < 0) goto fail;
  dev->cu->cuCtxGetCurrent(&dev->prev);
  if (CHECK(dev, cuDevicePrimaryCtxRetain(&dev->ctx, dev->dev), "cuDevicePrimaryCtxRetain") < 0) goto fail;
  if (CHECK(dev, cuCtxSetCurrent(dev->ctx), "cuCtxSetCurrent") < 0) {
    dev->cu->cuDevicePrimaryCtxRelease(dev->dev);
    goto fail;
  }
  rt_debug(1, "device %d: %s, sm_%d%d, %d SMs", ordinal, props.name, props.cc_major, props.cc_minor,
           props.sm_count);
  *out = dev;
  return 0;
fail:
  free(dev);
  return -1;
}

void rt_device_close(rt_device *dev) {
  if (!dev) return;
  CUcontext cur = NULL;
  if (dev->cu->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == dev->ctx && dev->prev != dev->ctx)
    dev->cu->cuCtxSetCurrent(dev->prev);
  dev->cu->cuDevicePrimaryCtxRelease(dev->dev);
  free(dev);
}

const rt_device_props *rt_device_info(const rt_device *dev) { return &dev->props; }

void rt_arch_of_device(const rt_device *dev, char *buf, size_t size) {
  rt_arch_of_cc(dev->props.cc_major, dev->props.cc_minor, buf, size);
}

int rt_device_sync(rt_device *dev, rt_err *err) {
  if (rt_device_make_current(dev, err) < 0) return -1;
  return CHECK(dev, cuCtxSynchronize(), "cuCtxSynchronize");
}

/* ---- memory ---------------------------------------------------------------------- */

/* The copies and sets below run on the legacy default stream and may return
 * before the device has finished them; waiting here makes them complete
 * when they return, so that work on any other stream sees their result. */
static int finish(rt_device *dev, rt_err *err) {
  return CHECK(dev, cuStreamSynchronize(NULL), "cuStreamSynchronize");
}

int rt_mem_alloc(rt_device *dev, size_t bytes, rt_dptr *out, rt_err *err) {
  *out = 0;
  if (bytes == 0) return 0;
  if (rt_device_make_current(dev, err) < 0) return -1;
  CUdeviceptr p = 0;
  CUresult r = dev->cu->cuMemAlloc(&p, bytes);
  if (r != CUDA_SUCCESS) {
    kbc_buf call = {0};
    kbc_buf_printf(&call, "cuMemAlloc_v2(%zu bytes)", bytes);
    rt_cu_check(r, call.data, err);
    kbc_buf_free(&call);
    return -1;
  }
  *out = p;
  return 0;
}

int rt_mem_free(rt_device *dev, rt_dptr p, rt_err *err) {
  if (!p) return 0;
  if (rt_device_make_current(dev, err) < 0) return -1;
  return CHECK(dev, cuMemFree(p), "cuMemFree_v2");
}

int rt_memset_d8(rt_device *dev, rt_dptr p, unsigned char value, size_t bytes, rt_err *err) {
  if (!bytes) return 0;
  if (rt_device_make_current(dev, err) < 0) return -1;
  if (CHECK(dev, cuMemsetD8(p, value, bytes), "cuMemsetD8_v2") < 0) return -1;
  return finish(dev, err);
}

int rt_memset_d32(rt_device *dev, rt_dptr p, unsigned int value, size_t count, rt_err *err) {
  if (!count) return 0;
  if (rt_device_make_current(dev, err) < 0) return -1;
  if (CHECK(dev, cuMemsetD32(p, value, count), "cuMemsetD32_v2") < 0) return -1;
  return finish(dev, err);
}

int rt_memcpy_htod(rt_device *dev, rt_dptr dst, const void *src, size_t bytes, rt_err *err) {
  if (!bytes) return 0;
  if (rt_device_make_current(dev, err) < 0) return -1;
  if (CHECK(dev, cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD_v2") < 0) return -1;
  return finish(dev, err);
}

int rt_memcpy_dtoh(rt_device *dev, void *dst, rt_dptr src, size_t bytes, rt_err *err) {
  if (!bytes) return 0;
  if (rt_device_make_current(dev, err) < 0) return -1;
  return CHECK(dev, cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH_v2");
}

int rt_memcpy_dtod(rt_device *dev, rt_dptr dst, rt_dptr src, size_t bytes, rt_err *err) {
  if (!bytes) return 0;
  if (rt_device_make_current(dev, err) < 0) return -1;
  if (CHECK(dev, cuMemcpyDtoD(dst, src, bytes), "cuMemcpyDtoD_v2") < 0) return -1;
  return finish(dev, err);
}

/* ---- streams and events ------------------------------------------------------------- */

int rt_stream_create(rt_device *dev, void **stream, rt_err *err) {
  CUstream s = NULL;
  *stream = NULL;
  if (rt_device_make_current(dev, err) < 0) return -1;
  if (CHECK(dev, cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate") < 0) return -1;
  *stream = s;
  return 0;
}

int rt_stream_destroy(rt_device *dev, void *stream, rt_err *err) {
  if (!stream) return 0;
  if (rt_device_make_current(dev, err) < 0) return -1;
  return CHECK(dev, cuStreamDestroy((CUstream)stream), "cuStreamDestroy_v2");
}

/* ---- graphs --------------------------------------------------------------- */

int rt_graph_supported(rt_device *dev) {
  const rt_cuda_api *cu = dev->cu;
  return cu->cuStreamBeginCapture && cu->cuStreamEndCapture && cu->cuGraphInstantiate && cu->cuGraphLaunch &&
         cu->cuGraphExecDestroy && cu->cuGraphDestroy;
}

int rt_graph_capture_begin(rt_device *dev, void *stream, rt_err *err) {
  if (!rt_graph_supported(dev)) return rt_fail(err, RT_ERR_CUDA, "this CUDA driver has no graph capture");
  if (rt_device_make_current(dev, err) < 0) return -1;
  return CHECK(dev, cuStreamBeginCapture((CUstream)stream, 2 /* relaxed */), "cuStreamBeginCapture_v2");
}

static int prepare_launch(rt_function *fn, const unsigned grid[3], const unsigned block[3], size_t smem,
                          void *stream, const char *how, rt_err *err);
static int launch_failed(CUresult r, const char *call, rt_function *fn, const unsigned grid[3],
                         const unsigned block[3], size_t smem, rt_err *err);

struct rt_graph {
  rt_device *dev;
  CUgraph graph;      /* kept: its nodes name the instantiated graph's */
  CUgraphExec exec;
  CUgraphNode *nodes; /* the kernel nodes in launch order */
  int n_nodes;        /* -1: not a chain of kernels, or no way to change one */
};

/* The graph's nodes in launch order, where it is one chain of kernel
 * nodes (a stream's launches); else n_nodes = -1. */
static void chain_of_kernels(rt_graph *g) {
  const rt_cuda_api *cu = g->dev->cu;
  g->n_nodes = -1;
  if (!cu->cuGraphGetRootNodes || !cu->cuGraphNodeGetDependentNodes || !cu->cuGraphNodeGetType ||
      !cu->cuGraphExecKernelNodeSetParams)
    return;
  CUgraphNode node = NULL;
  size_t n = 1;
  if (cu->cuGraphGetRootNodes(g->graph, NULL, &n) != CUDA_SUCCESS || n != 1 ||
      cu->cuGraphGetRootNodes(g->graph, &node, &n) != CUDA_SUCCESS)
    return;
  int len = 0, cap = 0;
  CUgraphNode *nodes = NULL;
  while (node) {
    int type = -1;
    if (cu->cuGraphNodeGetType(node, &type) != CUDA_SUCCESS || type != CU_GRAPH_NODE_TYPE_KERNEL) goto fail;
    if (len == cap) {
      CUgraphNode *more = realloc(nodes, sizeof *nodes * (size_t)(cap = cap ? 2 * cap : 64));
      if (!more) goto fail;
      nodes = more;
    }
    nodes[len++] = node;
    CUgraphNode next = NULL; /* a branch, or no answer: fail */
    if (cu->cuGraphNodeGetDependentNodes(node, NULL, NULL, &n) != CUDA_SUCCESS || n > 1 ||
        (n == 1 && cu->cuGraphNodeGetDependentNodes(node, &next, NULL, &n) != CUDA_SUCCESS))
      goto fail;
    node = next;
  }
  g->nodes = nodes;
  g->n_nodes = len;
  return;
fail:
  free(nodes);
}

/* Ends the capture and instantiates it; its kernel nodes nodes[0..n)
 * where given (n >= 0), else walked as a chain. */
static int capture_end(rt_device *dev, void *stream, void *const *nodes, int n, rt_graph **out, rt_err *err) {
  CUgraph graph = NULL;
  CUgraphExec e = NULL;
  *out = NULL;
  if (CHECK(dev, cuStreamEndCapture((CUstream)stream, &graph), "cuStreamEndCapture") < 0) return -1;
  rt_graph *g = calloc(1, sizeof *g);
  CUgraphNode *kept = n > 0 ? malloc(sizeof *kept * (size_t)n) : NULL;
  if (!g || (n > 0 && !kept)) {
    free(g);
    free(kept);
    dev->cu->cuGraphDestroy(graph);
    return rt_fail(err, RT_ERR_MEMORY, "out of memory");
  }
  if (CHECK(dev, cuGraphInstantiate(&e, graph, 0), "cuGraphInstantiateWithFlags") < 0) {
    dev->cu->cuGraphDestroy(graph);
    free(g);
    free(kept);
    return -1;
  }
  *g = (rt_graph){.dev = dev, .graph = graph, .exec = e};
  if (n < 0) chain_of_kernels(g);
  else {
    for (int i = 0; i < n; i++) kept[i] = (CUgraphNode)nodes[i];
    g->nodes = kept;
    g->n_nodes = dev->cu->cuGraphExecKernelNodeSetParams ? n : -1;
  }
  *out = g;
  return 0;
}

int rt_graph_capture_end(rt_device *dev, void *stream, rt_graph **out, rt_err *err) {
  return capture_end(dev, stream, NULL, -1, out, err);
}

int rt_graph_capture_end_nodes(rt_device *dev, void *stream, void *const *nodes, int n, rt_graph **out, rt_err *err) {
  return capture_end(dev, stream, nodes, n, out, err);
}

int rt_graph_branches_supported(rt_device *dev) {
  return rt_graph_supported(dev) && dev->cu->cuStreamWaitEvent && dev->cu->cuStreamGetCaptureInfo;
}

int rt_stream_wait_event(rt_device *dev, void *stream, void *event, rt_err *err) {
  return CHECK(dev, cuStreamWaitEvent((CUstream)stream, (CUevent)event, 0), "cuStreamWaitEvent");
}

int rt_graph_capture_last(rt_device *dev, void *stream, void **node, rt_err *err) {
  int status = 0;
  const CUgraphNode *deps = NULL;
  size_t n = 0;
  *node = NULL;
  if (CHECK(dev, cuStreamGetCaptureInfo((CUstream)stream, &status, NULL, NULL, &deps, NULL, &n),
            "cuStreamGetCaptureInfo_v3") < 0)
    return -1;
  if (status != 1 || n != 1) return rt_fail(err, RT_ERR_INTERNAL, "the capture's last node: %zu dependencies (status %d)", n, status);
  *node = deps[0];
  return 0;
}

int rt_graph_kernels(const rt_graph *g) { return g ? g->n_nodes : -1; }

int rt_graph_set_kernel(rt_graph *g, int i, rt_function *fn, const unsigned grid[3], const unsigned block[3],
                        size_t smem, void **args, rt_err *err) {
  if (!g || i < 0 || i >= g->n_nodes)
    return rt_fail(err, RT_ERR_INTERNAL, "graph node %d of %d changed", i, g ? g->n_nodes : 0);
  if (prepare_launch(fn, grid, block, smem, NULL, "graph node of", err) < 0) return -1;
  CUDA_KERNEL_NODE_PARAMS_v2 p = {.func = fn->f,
                                  .gridDimX = grid[0], .gridDimY = grid[1], .gridDimZ = grid[2],
                                  .blockDimX = block[0], .blockDimY = block[1], .blockDimZ = block[2],
                                  .sharedMemBytes = (unsigned)smem, .kernelParams = args};
  CUresult r = g->dev->cu->cuGraphExecKernelNodeSetParams(g->exec, g->nodes[i], &p);
  return r == CUDA_SUCCESS ? 0 : launch_failed(r, "cuGraphExecKernelNodeSetParams_v2", fn, grid, block, smem, err);
}

int rt_stream_capturing(rt_device *dev, void *stream) {
  int status = 0;
  if (!dev->cu->cuStreamIsCapturing || rt_device_make_current(dev, NULL) < 0) return 0;
  if (dev->cu->cuStreamIsCapturing((CUstream)stream, &status) != 0) return 0;
  return status != 0;
}

int rt_graph_launch(rt_graph *g, void *stream, rt_err *err) {
  return CHECK(g->dev, cuGraphLaunch(g->exec, (CUstream)stream), "cuGraphLaunch");
}

void rt_graph_destroy(rt_graph *g) {
  if (!g) return;
  g->dev->cu->cuGraphExecDestroy(g->exec); /* (a graph was made: the driver has graphs) */
  g->dev->cu->cuGraphDestroy(g->graph);
  free(g->nodes);
  free(g);
}

int rt_stream_sync(rt_device *dev, void *stream, rt_err *err) {
  if (rt_device_make_current(dev, err) < 0) return -1;
  return CHECK(dev, cuStreamSynchronize((CUstream)stream), "cuStreamSynchronize");
}

static int event_create(rt_device *dev, unsigned flags, void **event, rt_err *err) {
  CUevent e = NULL;
  *event = NULL;
  if (rt_device_make_current(dev, err) < 0) return -1;
  if (CHECK(dev, cuEventCreate(&e, flags), "cuEventCreate") < 0) return -1;
  *event = e;
  return 0;
}

int rt_event_create(rt_device *dev, void **event, rt_err *err) { return event_create(dev, CU_EVENT_DEFAULT, event, err); }

int rt_event_create_untimed(rt_device *dev, void **event, rt_err *err) {
  return event_create(dev, 2 /* CU_EVENT_DISABLE_TIMING */, event, err);
}

int rt_event_destroy(rt_device *dev, void *event, rt_err *err) {
  if (!event) return 0;
  if (rt_device_make_current(dev, err) < 0) return -1;
  return CHECK(dev, cuEventDestroy((CUevent)event), "cuEventDestroy_v2");
}

int rt_event_record(rt_device *dev, void *event, void *stream, rt_err *err) {
  if (rt_device_make_current(dev, err) < 0) return -1;
  return CHECK(dev, cuEventRecord((CUevent)event, (CUstream)stream), "cuEventRecord");
}

int rt_event_sync(rt_device *dev, void *event, rt_err *err) {
  if (rt_device_make_current(dev, err) < 0) return -1;
  return CHECK(dev, cuEventSynchronize((CUevent)event), "cuEventSynchronize");
}

int rt_event_elapsed_ms(rt_device *dev, void *start, void *end, float *ms, rt_err *err) {
  *ms = 0;
  if (rt_device_make_current(dev, err) < 0) return -1;
  return CHECK(dev, cuEventElapsedTime(ms, (CUevent)start, (CUevent)end), "cuEventElapsedTime_v2");
}

/* ---- modules and functions ------------------------------------------------------------ */

int rt_module_load(rt_device *dev, const rt_blob *image, rt_module **out, rt_err *err) {
  *out = NULL;
  if (!image || !image->data || !image->len) return rt_fail(err, RT_ERR_ARGUMENT, "rt_module_load: empty image");
  if (rt_device_make_current(dev, err) < 0) return -1;
  char log[8192] = "";
  CUjit_option opt[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *val[2] = {log, (void *)(uintptr_t)sizeof log};
  CUmodule m = NULL;
  CUresult r = dev->cu->cuModuleLoadDataEx(&m, image->data, 2, opt, val);
  if (r != CUDA_SUCCESS) {
    kbc_buf d = {0};
    rt_cu_describe(r, &d);
    log[sizeof log - 1] = 0;
    rt_fail(err, rt_cu_kind(r), "cuModuleLoadDataEx: %s; device %d is sm_%d%d%s%s", d.data, dev->props.ordinal,
            dev->props.cc_major, dev->props.cc_minor, log[0] ? "\n" : "", log);
    kbc_buf_free(&d);
    return -1;
  }
  rt_module *mod = xcalloc(1, sizeof *mod);
  mod->dev = dev;
  mod->m = m;
  *out = mod;
  return 0;
}

void rt_module_unload(rt_module *mod) {
  if (!mod) return;
  if (rt_device_make_current(mod->dev, NULL) == 0) mod->dev->cu->cuModuleUnload(mod->m);
  for (rt_function *f = mod->fns, *next; f; f = next) {
    next = f->next;
    free(f->name);
    free(f);
  }
  free(mod);
}

static int query_attrs(const rt_cuda_api *cu, CUfunction f, rt_function_attrs *a, rt_err *err) {
  static const struct {
    int attr;
    size_t offset;
    const char *what;
  } q[] = {
      {CU_FUNC_ATTRIBUTE_NUM_REGS, offsetof(rt_function_attrs, registers), "NUM_REGS"},
      {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, offsetof(rt_function_attrs, static_smem), "SHARED_SIZE_BYTES"},
      {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, offsetof(rt_function_attrs, local_bytes), "LOCAL_SIZE_BYTES"},
      {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(rt_function_attrs, max_threads_per_block), "MAX_THREADS_PER_BLOCK"},
      {CU_FUNC_ATTRIBUTE_BINARY_VERSION, offsetof(rt_function_attrs, binary_version), "BINARY_VERSION"},
  };
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
    int v = 0;
    CUresult r = cu->cuFuncGetAttribute(&v, q[i].attr, f);
    if (r != CUDA_SUCCESS) {
      kbc_buf call = {0};
      kbc_buf_printf(&call, "cuFuncGetAttribute(%s)", q[i].what);
      rt_cu_check(r, call.data, err);
      kbc_buf_free(&call);
      return -1;
    }
    memcpy((char *)a + q[i].offset, &v, sizeof v);
  }
  return 0;
}

int rt_module_function(rt_module *mod, const char *name, rt_function **out, rt_err *err) {
  *out = NULL;
  for (rt_function *f = mod->fns; f; f = f->next)
    if (!strcmp(f->name, name)) return *out = f, 0;
  rt_device *dev = mod->dev;
  if (rt_device_make_current(dev, err) < 0) return -1;
  CUfunction f = NULL;
  CUresult r = dev->cu->cuModuleGetFunction(&f, mod->m, name);
  if (r == CUDA_ERROR_NOT_FOUND) return rt_fail(err, RT_ERR_CUDA, "cuModuleGetFunction: no kernel named '%s' in the module", name);
  kbc_buf call = {0};
  kbc_buf_printf(&call, "cuModuleGetFunction(%s)", name);
  int rc = rt_cu_check(r, call.data, err);
  kbc_buf_free(&call);
  if (rc < 0) return -1;
  rt_function_attrs attrs;
  if (query_attrs(dev->cu, f, &attrs, err) < 0) return -1;
  rt_function *fn = xcalloc(1, sizeof *fn);
  fn->name = strdup(name);
  if (!fn->name) abort();
  fn->f = f;
  fn->mod = mod;
  fn->attrs = attrs;
  /* the driver's default: what the 48 KB a block gets without opting in
   * leaves beside the static shared memory (a GEMM's static k tables beside
   * its dynamic stages: 46,080 B of stages failed to launch with 12 KB of
   * tables, found 2026-12-04) */
  fn->dyn_smem_limit = attrs.static_smem < DEFAULT_DYN_SMEM ? DEFAULT_DYN_SMEM - attrs.static_smem : 0;
  fn->next = mod->fns;
  mod->fns = fn;
  rt_debug(2, "kernel %s: %d registers, %d B static smem, %d B local, max %d threads/block",
           name, attrs.registers, attrs.static_smem, attrs.local_bytes, attrs.max_threads_per_block);
  *out = fn;
  return 0;
}

int rt_function_get_attrs(rt_function *fn, rt_function_attrs *out, rt_err *err) {
  (void)err;
  *out = fn->attrs;
  return 0;
}

const char *rt_function_name(const rt_function *fn) { return fn->name; }

int rt_occupancy(rt_function *fn, int block_threads, size_t smem, int *blocks_per_sm, rt_err *err) {
  rt_device *dev = fn->mod->dev;
  *blocks_per_sm = 0;
  if (!dev->cu->cuOccupancyMaxActiveBlocksPerMultiprocessor)
    return rt_fail(err, RT_ERR_CUDA, "this CUDA driver lacks cuOccupancyMaxActiveBlocksPerMultiprocessor");
  if (rt_device_make_current(dev, err) < 0) return -1;
  return CHECK(dev, cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, fn->f, block_threads, smem),
               "cuOccupancyMaxActiveBlocksPerMultiprocessor");
}

/* ---- launches ------------------------------------------------------------------------ */

/* Checks a configuration against the device and the kernel, and raises the
 * kernel's dynamic shared memory limit when needed. */
static int prepare_launch(rt_function *fn, const unsigned grid[3], const unsigned block[3],
                          size_t smem, void *stream, const char *how, rt_err *err) {
  rt_device *dev = fn->mod->dev;
  const rt_device_props *p = &dev->props;
  unsigned long long threads = (unsigned long long)block[0] * block[1] * block[2];
  rt_debug(2, "%s %s: grid %ux%ux%u, block %ux%ux%u, smem %zu B, stream %p", how, fn->name, grid[0],
           grid[1], grid[2], block[0], block[1], block[2], smem, stream);
  if (!grid[0] || !grid[1] || !grid[2] || !threads)
    return rt_fail(err, RT_ERR_ARGUMENT, "launch of %s: empty grid %ux%ux%u or block %ux%ux%u", fn->name, grid[0],
                   grid[1], grid[2], block[0], block[1], block[2]);
  if (threads > (unsigned long long)fn->attrs.max_threads_per_block)
    return rt_fail(err, RT_ERR_CUDA, "launch of %s: a block of %llu threads exceeds the %d this kernel allows "
                   "(%d registers per thread)", fn->name, threads, fn->attrs.max_threads_per_block,
                   fn->attrs.registers);
  if (smem + (size_t)fn->attrs.static_smem > (size_t)p->smem_per_block_optin)
    return rt_fail(err, RT_ERR_CUDA, "launch of %s: %zu B of dynamic + %d B of static shared memory exceed the "
                   "%d B per block of device %d", fn->name, smem, fn->attrs.static_smem,
                   p->smem_per_block_optin, p->ordinal);
  if (rt_device_make_current(dev, err) < 0) return -1;
  if (smem > (size_t)fn->dyn_smem_limit) {
    kbc_buf call = {0};
    kbc_buf_printf(&call, "cuFuncSetAttribute(%s, MAX_DYNAMIC_SHARED_SIZE_BYTES, %zu)", fn->name, smem);
    int rc = rt_cu_check(dev->cu->cuFuncSetAttribute(fn->f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                     (int)smem), call.data, err);
    kbc_buf_free(&call);
    if (rc < 0) return -1;
    fn->dyn_smem_limit = (int)smem;
  }
  return 0;
}

static int launch_failed(CUresult r, const char *call, rt_function *fn, const unsigned grid[3],
                         const unsigned block[3], size_t smem, rt_err *err) {
  kbc_buf what = {0};
  kbc_buf_printf(&what, "%s(%s, grid %ux%ux%u, block %ux%ux%u, smem %zu B)", call, fn->name, grid[0],
                 grid[1], grid[2], block[0], block[1], block[2], smem);
  rt_cu_check(r, what.data, err);
  kbc_buf_free(&what);
  return -1;
}

int rt_launch(rt_function *fn, const unsigned grid[3], const unsigned block[3], size_t smem,
              void *stream, void **args, rt_err *err) {
  if (prepare_launch(fn, grid, block, smem, stream, "launch", err) < 0) return -1;
  CUresult r = fn->mod->dev->cu->cuLaunchKernel(fn->f, grid[0], grid[1], grid[2], block[0], block[1],
                                                block[2], (unsigned)smem, (CUstream)stream, args, NULL);
  return r == CUDA_SUCCESS ? 0 : launch_failed(r, "cuLaunchKernel", fn, grid, block, smem, err);
}

int rt_launch_ex(rt_function *fn, const unsigned grid[3], const unsigned block[3], size_t smem,
                 void *stream, void **args, const rt_launch_opts *o, rt_err *err) {
  static const rt_launch_opts none;
  if (!o) o = &none;
  int cluster = o->cluster[0] || o->cluster[1] || o->cluster[2];
  if (!cluster && !o->cooperative && !o->programmatic_serialization)
    return rt_launch(fn, grid, block, smem, stream, args, err);
  const rt_cuda_api *cu = fn->mod->dev->cu;
  if (cluster) {
    for (int i = 0; i < 3; i++)
      if (!o->cluster[i] || grid[i] % o->cluster[i])
        return rt_fail(err, RT_ERR_ARGUMENT, "launch of %s: cluster %ux%ux%u does not divide grid %ux%ux%u", fn->name,
                       o->cluster[0], o->cluster[1], o->cluster[2], grid[0], grid[1], grid[2]);
    if (fn->mod->dev->props.cc_major < 9)
      return rt_fail(err, RT_ERR_ARGUMENT, "launch of %s: thread-block clusters need sm_90 or newer", fn->name);
  }
  if (o->cooperative && !fn->mod->dev->props.cooperative_launch)
    return rt_fail(err, RT_ERR_ARGUMENT, "launch of %s: device %d does not support cooperative launches", fn->name,
                   fn->mod->dev->props.ordinal);
  if (prepare_launch(fn, grid, block, smem, stream, "launch_ex", err) < 0) return -1;
  if (cluster && o->non_portable_cluster &&
      rt_cu_check(cu->cuFuncSetAttribute(fn->f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                  "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)", err) < 0)
    return -1;
  if (!cu->cuLaunchKernelEx) {
    if (cluster || o->programmatic_serialization || !cu->cuLaunchCooperativeKernel)
      return rt_fail(err, RT_ERR_CUDA, "launch of %s: this CUDA driver lacks cuLaunchKernelEx", fn->name);
    CUresult r = cu->cuLaunchCooperativeKernel(fn->f, grid[0], grid[1], grid[2], block[0], block[1],
                                               block[2], (unsigned)smem, (CUstream)stream, args);
    return r == CUDA_SUCCESS ? 0 : launch_failed(r, "cuLaunchCooperativeKernel", fn, grid, block, smem, err);
  }
  CUlaunchAttribute attrs[3];
  unsigned n = 0;
  memset(attrs, 0, sizeof attrs);
  if (cluster) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = o->cluster[0];
    attrs[n].value.clusterDim.y = o->cluster[1];
    attrs[n++].value.clusterDim.z = o->cluster[2];
  }
  if (o->cooperative) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[n++].value.cooperative = 1;
  }
  if (o->programmatic_serialization) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[n++].value.programmaticStreamSerializationAllowed = 1;
  }
  CUlaunchConfig cfg = {grid[0], grid[1], grid[2], block[0], block[1], block[2],
                        (unsigned)smem, (CUstream)stream, attrs, n};
  CUresult r = cu->cuLaunchKernelEx(&cfg, fn->f, args, NULL);
  return r == CUDA_SUCCESS ? 0 : launch_failed(r, "cuLaunchKernelEx", fn, grid, block, smem, err);
}

/* ---- rt_info ------------------------------------------------------------------------------ */

static void human_bytes(kbc_buf *out, double b) {
  const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (b >= 1024 && i < 4) b /= 1024, i++;
  kbc_buf_printf(out, i ? "%.1f %s" : "%.0f %s", b, unit[i]);
}

void rt_info(const char *kbc_version, kbc_buf *out) {
  rt_err err = {0};
  int major = 0, minor = 0;
  kbc_buf_printf(out, "kbc %s\n", kbc_version ? kbc_version : "(unknown version)");
  if (rt_nvrtc_version(&major, &minor, &err) == 0) {
    kbc_buf_printf(out, "NVRTC %d.%d (%s)\n", major, minor, rt_nvrtc_lib_name());
    int archs[128];
    int n = rt_nvrtc_supported_archs(archs, 128, NULL);
    if (n > 0) {
      kbc_buf_puts(out, "  NVRTC targets:");
      for (int i = 0; i < n && i < 128; i++) kbc_buf_printf(out, " sm_%d", archs[i]);
      kbc_buf_puts(out, "\n");
    }
  } else {
    kbc_buf_printf(out, "NVRTC: not available: %s\n", rt_err_msg(&err));
  }
  kbc_buf_puts(out, "  kbc targets:");
  for (int i = 0; rt_kbc_archs[i]; i++) kbc_buf_printf(out, " %s", rt_kbc_archs[i]);
  kbc_buf_puts(out, " (auto: the device's)\n");

  int count = 0;
  const rt_cuda_api *cu = rt_cuda(&err);
  if (!cu) {
    kbc_buf_printf(out, "CUDA driver: none (%s)\n", rt_err_msg(&err));
  } else {
    int v = 0;
    cu->cuDriverGetVersion(&v);
    kbc_buf_printf(out, "CUDA driver: CUDA %d.%d (%s)\n", v / 1000, v % 1000 / 10, rt_cuda_lib_name());
    if (rt_device_count(&count, &err) < 0) kbc_buf_printf(out, "  devices: %s\n", rt_err_msg(&err));
    else if (count == 0) kbc_buf_puts(out, "  no CUDA devices\n");
  }
  for (int i = 0; i < count; i++) {
    rt_device_props p;
    if (rt_device_query(i, &p, &err) < 0) {
      kbc_buf_printf(out, "  device %d: %s\n", i, rt_err_msg(&err));
      continue;
    }
    char arch[16];
    rt_arch_of_cc(p.cc_major, p.cc_minor, arch, sizeof arch);
    kbc_buf_printf(out, "  device %d: %s, sm_%d%d (auto target %s), %d SMs, ", i, p.name, p.cc_major,
                   p.cc_minor, arch, p.sm_count);
    human_bytes(out, (double)p.total_mem);
    kbc_buf_puts(out, ", shared memory per block ");
    human_bytes(out, p.smem_per_block_optin);
    kbc_buf_puts(out, " (opt-in), L2 ");
    human_bytes(out, p.l2_bytes);
    kbc_buf_puts(out, "\n");
  }

  kbc_buf dir = {0};
  long entries = 0;
  long long bytes = 0;
  if (rt_cache_dir_path(&dir, &err) < 0) {
    kbc_buf_printf(out, "cache: unusable (%s)\n", rt_err_msg(&err));
  } else if (access(dir.data, F_OK) < 0) {
    kbc_buf_printf(out, "cache: %s (not created yet)\n", dir.data);
  } else if (rt_cache_stats(dir.data, &entries, &bytes, &err) < 0) {
    kbc_buf_printf(out, "cache: %s (%s)\n", dir.data, rt_err_msg(&err));
  } else {
    kbc_buf_printf(out, "cache: %s, %ld entr%s, ", dir.data, entries, entries == 1 ? "y" : "ies");
    human_bytes(out, (double)bytes);
    kbc_buf_puts(out, "\n");
  }
  const char *dump = kbc_env_str("KBC_DUMP_DIR");
  if (kbc_env_flag("KBC_ALWAYS_COMPILE", 0)) kbc_buf_puts(out, "  KBC_ALWAYS_COMPILE: the cache is not read\n");
  if (dump) kbc_buf_printf(out, "  KBC_DUMP_DIR: %s\n", dump);
  /* what the code is generated with (docs/ARCHITECTURE.md, "Switches") */
  cg_options o = cg_options_from_env();
  int spec = rt_special_limit_from_env();
  if (spec) kbc_buf_printf(out, "code: specialized for the first %d bindings of a program (KBC_SPECIALIZE)", spec);
  else kbc_buf_puts(out, "code: generic, not specialized (KBC_SPECIALIZE=0)");
  cg_options_describe(&o, out);
  kbc_buf_puts(out, "\n");
  kbc_buf_free(&dir);
  rt_err_free(&err);
}
