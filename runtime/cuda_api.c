/* cuda_api.c — see cuda_api.h.  Loads libcuda once, resolves the table by
 * symbol name, initializes the driver, and turns CUresult codes into
 * messages. */
#include "cuda_api.h"

#include "rt_common.h"
#include "support/env.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Table of symbols: the member's offset in rt_cuda_api and the symbol name
 * that cuda.h 13.0 maps the member's plain name to. */
static const struct {
  size_t offset;
  const char *symbol;
  int optional;
} symbols[] = {
#define SYM(member, symbol) {offsetof(rt_cuda_api, member), symbol, 0}
#define OPT(member, symbol) {offsetof(rt_cuda_api, member), symbol, 1}
    SYM(cuGetErrorName, "cuGetErrorName"),
    SYM(cuGetErrorString, "cuGetErrorString"),
    SYM(cuInit, "cuInit"),
    SYM(cuDriverGetVersion, "cuDriverGetVersion"),
    SYM(cuDeviceGetCount, "cuDeviceGetCount"),
    SYM(cuDeviceGet, "cuDeviceGet"),
    SYM(cuDeviceGetName, "cuDeviceGetName"),
    SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
    SYM(cuDeviceTotalMem, "cuDeviceTotalMem_v2"),
    SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    SYM(cuCtxSetCurrent, "cuCtxSetCurrent"),
    SYM(cuCtxGetCurrent, "cuCtxGetCurrent"),
    SYM(cuCtxSynchronize, "cuCtxSynchronize"),
    SYM(cuMemAlloc, "cuMemAlloc_v2"),
    SYM(cuMemFree, "cuMemFree_v2"),
    SYM(cuMemsetD8, "cuMemsetD8_v2"),
    SYM(cuMemsetD32, "cuMemsetD32_v2"),
    SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2"),
    SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2"),
    SYM(cuMemcpyDtoD, "cuMemcpyDtoD_v2"),
    SYM(cuModuleLoadDataEx, "cuModuleLoadDataEx"),
    SYM(cuModuleUnload, "cuModuleUnload"),
    SYM(cuModuleGetFunction, "cuModuleGetFunction"),
    SYM(cuFuncGetAttribute, "cuFuncGetAttribute"),
    SYM(cuFuncSetAttribute, "cuFuncSetAttribute"),
    SYM(cuLaunchKernel, "cuLaunchKernel"),
    OPT(cuLaunchKernelEx, "cuLaunchKernelEx"),
    OPT(cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel"),
    OPT(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor"),
    SYM(cuStreamCreate, "cuStreamCreate"),
    SYM(cuStreamDestroy, "cuStreamDestroy_v2"),
    SYM(cuStreamSynchronize, "cuStreamSynchronize"),
    SYM(cuEventCreate, "cuEventCreate"),
    SYM(cuEventDestroy, "cuEventDestroy_v2"),
    SYM(cuEventRecord, "cuEventRecord"),
    SYM(cuEventSynchronize, "cuEventSynchronize"),
    SYM(cuEventElapsedTime, "cuEventElapsedTime_v2"),
    OPT(cuStreamBeginCapture, "cuStreamBeginCapture_v2"),
    OPT(cuStreamEndCapture, "cuStreamEndCapture"),
    OPT(cuGraphInstantiate, "cuGraphInstantiateWithFlags"),
    OPT(cuGraphLaunch, "cuGraphLaunch"),
    OPT(cuGraphExecDestroy, "cuGraphExecDestroy"),
    OPT(cuGraphDestroy, "cuGraphDestroy"),
    OPT(cuGraphGetRootNodes, "cuGraphGetRootNodes"),
    OPT(cuGraphNodeGetDependentNodes, "cuGraphNodeGetDependentNodes_v2"),
    OPT(cuGraphNodeGetType, "cuGraphNodeGetType"),
    OPT(cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2"),
    OPT(cuStreamIsCapturing, "cuStreamIsCapturing"),
    OPT(cuStreamWaitEvent, "cuStreamWaitEvent"),
    OPT(cuStreamGetCaptureInfo, "cuStreamGetCaptureInfo_v3"),
#undef SYM
#undef OPT
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static rt_cuda_api api;
static int loaded;           /* api is usable */
static rt_err load_error;   /* why not, when !loaded */
static const char *lib_name; /* what was dlopen'ed */

/* The error table (names only) for when the driver's own cuGetErrorName is
 * missing or fails, e.g. while reporting that cuInit failed in a stub. */
static const struct {
  CUresult code;
  const char *name;
} fallback_names[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY"},
    {CUDA_ERROR_INSUFFICIENT_DRIVER, "CUDA_ERROR_INSUFFICIENT_DRIVER"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX"},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED"},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"},
    {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
    {CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
    {CUDA_ERROR_INVALID_CLUSTER_SIZE, "CUDA_ERROR_INVALID_CLUSTER_SIZE"},
};

void rt_cu_describe(CUresult r, kbc_buf *out) {
  const char *name = NULL, *text = NULL;
  if (api.cuGetErrorName && api.cuGetErrorName(r, &name) != CUDA_SUCCESS) name = NULL;
  if (api.cuGetErrorString && api.cuGetErrorString(r, &text) != CUDA_SUCCESS) text = NULL;
  for (size_t i = 0; !name && i < sizeof fallback_names / sizeof fallback_names[0]; i++)
    if (fallback_names[i].code == r) name = fallback_names[i].name;
  if (!text && r == CUDA_ERROR_STUB_LIBRARY)
    text = "the CUDA stub library was loaded instead of a real driver";
  if (!text && r == CUDA_ERROR_NO_DEVICE) text = "no CUDA-capable device is detected";
  if (name) kbc_buf_puts(out, name);
  else kbc_buf_printf(out, "CUDA error %d", r);
  if (text) kbc_buf_printf(out, " (%s)", text);
}

rt_err_kind rt_cu_kind(CUresult r) {
  switch (r) {
  case CUDA_ERROR_STUB_LIBRARY:
  case CUDA_ERROR_INSUFFICIENT_DRIVER:
  case CUDA_ERROR_NO_DEVICE:
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
  case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: return RT_ERR_NO_DEVICE;
  default: return RT_ERR_CUDA;
  }
}

int rt_cu_check(CUresult r, const char *call, rt_err *err) {
  if (r == CUDA_SUCCESS) return 0;
  kbc_buf d = {0};
  rt_cu_describe(r, &d);
  rt_fail(err, rt_cu_kind(r), "%s: %s", call, kbc_buf_str(&d));
  kbc_buf_free(&d);
  return -1;
}

static void load(void) {
  const char *env = kbc_env_str("KBC_CUDA_LIB");
  const char *names[] = {env ? env : "libcuda.so.1", "libcuda.so"};
  int n_names = env ? 1 : 2;
  void *h = NULL;
  kbc_buf why = {0};
  for (int i = 0; i < n_names && !h; i++) {
    h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) lib_name = names[i];
    else if (i == 0) kbc_buf_puts(&why, dlerror()); /* the primary name's reason */
  }
  if (!h) {
    rt_fail(&load_error, RT_ERR_NO_DEVICE, "no CUDA driver: %s could not be loaded (%s)", names[0], kbc_buf_str(&why));
    kbc_buf_free(&why);
    return;
  }
  kbc_buf_free(&why);
  for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
    void *p = dlsym(h, symbols[i].symbol);
    if (!p && !symbols[i].optional) {
      rt_fail(&load_error, RT_ERR_NO_DEVICE, "CUDA driver %s lacks %s (driver too old for kbc?)", lib_name, symbols[i].symbol);
      memset(&api, 0, sizeof api);
      dlclose(h);
      lib_name = NULL;
      return;
    }
    memcpy((char *)&api + symbols[i].offset, &p, sizeof p);
  }
  /* On failure the library stays loaded: the message needs its error names. */
  if (rt_cu_check(api.cuInit(0), "cuInit", &load_error) < 0) return;
  int v = 0;
  api.cuDriverGetVersion(&v);
  rt_debug(1, "CUDA driver %s loaded (CUDA %d.%d)", lib_name, v / 1000, v % 1000 / 10);
  loaded = 1;
}

const rt_cuda_api *rt_cuda(rt_err *err) {
  pthread_once(&once, load);
  if (loaded) return &api;
  rt_err_copy(err, &load_error);
  return NULL;
}

const char *rt_cuda_lib_name(void) { return lib_name; }
