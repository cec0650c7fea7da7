/* cuda_api.h — the CUDA Driver API as kbc uses it, loaded at run time with
 * dlopen so that kbc builds and runs (compile, emit, the CPU backend) where
 * there is no driver.  Nothing links against libcuda.
 *
 * The types and constants below are the few that kbc needs, written by hand
 * with the numeric values of the CUDA 13.0 header
 * (/usr/local/cuda/include/cuda.h, CUDA_VERSION 13000); they are ABI-stable.
 * Do not include <cuda.h> together with this header.
 *
 * Before: nothing.  rt_cuda() loads libcuda once per process ($KBC_CUDA_LIB
 * if set, else libcuda.so.1, else libcuda.so), resolves every entry point in
 * rt_cuda_api (by the versioned symbol names that cuda.h 13.0 maps the plain
 * names to: cuMemAlloc -> cuMemAlloc_v2, ...) and calls cuInit(0).
 * After: the same table for the life of the process, or NULL with the same
 * error on every call ("no CUDA driver: libcuda.so.1 could not be loaded
 * (<dlerror>)", RT_ERR_NO_DEVICE, or "cuInit: CUDA_ERROR_NO_DEVICE (...)",
 * of rt_cu_kind's kind).
 * Thread safety: rt_cuda() is safe to call from any thread (pthread_once);
 * the driver entry points themselves are thread-safe. */
#ifndef KBC_RUNTIME_CUDA_API_H
#define KBC_RUNTIME_CUDA_API_H

#include <stddef.h>

#include "rt_err.h"
#include "support/buf.h"

typedef int CUresult;                  /* enum cudaError_enum */
typedef int CUdevice;                  /* CUdevice_v1 */
typedef unsigned long long CUdeviceptr; /* CUdeviceptr_v2 on 64-bit hosts */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;

/* A kernel node's parameters (CUDA_KERNEL_NODE_PARAMS_v2, cuda.h 13.0), for
 * cuGraphExecKernelNodeSetParams_v2. */
typedef struct {
  CUfunction func;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  void **kernelParams;
  void **extra;
  void *kern;    /* CUkernel: unused (func is set) */
  CUcontext ctx; /* ignored when func is set */
} CUDA_KERNEL_NODE_PARAMS_v2;
enum { CU_GRAPH_NODE_TYPE_KERNEL = 0 }; /* CUgraphNodeType */

/* CUresult values (cuda.h 13.0, enum cudaError_enum). */
enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_INSUFFICIENT_DRIVER = 35,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720,
  CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
  CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
  CUDA_ERROR_INVALID_CLUSTER_SIZE = 912,
};

/* CUdevice_attribute values (cuda.h 13.0). */
enum {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
  CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
  CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
  CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

/* CUfunction_attribute values (cuda.h 13.0). */
enum {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
  CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
  CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  CU_FUNC_ATTRIBUTE_PTX_VERSION = 5,
  CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14,
};

/* Stream and event flags; CUjit_option values (cuda.h 13.0). */
enum { CU_STREAM_DEFAULT = 0x0, CU_STREAM_NON_BLOCKING = 0x1 };
enum { CU_EVENT_DEFAULT = 0x0, CU_EVENT_BLOCKING_SYNC = 0x1, CU_EVENT_DISABLE_TIMING = 0x2 };
enum { CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 };
typedef int CUjit_option;

/* CUlaunchAttributeID values and the launch-attribute / launch-config
 * structs of cuLaunchKernelEx (cuda.h 13.0: CUlaunchAttribute_st is the id,
 * padding to 8 bytes, then a 64-byte union aligned for pointers;
 * CUlaunchConfig_st as below). */
enum {
  CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
  CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
  CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
};
typedef struct {
  int id;
  char pad[4];
  union {
    char pad[64];
    void *align_;
    int cooperative;
    struct {
      unsigned int x, y, z;
    } clusterDim;
    int programmaticStreamSerializationAllowed;
  } value;
} CUlaunchAttribute;
typedef struct {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned int numAttrs;
} CUlaunchConfig;

/* The resolved entry points.  Members keep the names of cuda.h; the comment
 * names the symbol when it differs.  Entries marked optional may be NULL
 * (older drivers); every other one was found when rt_cuda() succeeded. */
typedef struct {
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuInit)(unsigned int);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);            /* _v2 */
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);             /* _v2 */
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxGetCurrent)(CUcontext *);
  CUresult (*cuCtxSynchronize)(void);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);               /* _v2 */
  CUresult (*cuMemFree)(CUdeviceptr);                          /* _v2 */
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);  /* _v2 */
  CUresult (*cuMemsetD32)(CUdeviceptr, unsigned int, size_t);  /* _v2 */
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t); /* _v2 */
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);       /* _v2 */
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);  /* _v2 */
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned int, CUjit_option *, void **);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncGetAttribute)(int *, int, CUfunction);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **); /* optional */
  CUresult (*cuLaunchCooperativeKernel)(CUfunction, unsigned int, unsigned int, unsigned int,
                                        unsigned int, unsigned int, unsigned int, unsigned int,
                                        CUstream, void **); /* optional */
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int, size_t); /* optional */
  CUresult (*cuStreamCreate)(CUstream *, unsigned int);
  CUresult (*cuStreamDestroy)(CUstream);                       /* _v2 */
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuEventCreate)(CUevent *, unsigned int);
  CUresult (*cuEventDestroy)(CUevent);                         /* _v2 */
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);   /* _v2 */
  /* CUDA graphs, for replaying a program's launches (all optional). */
  CUresult (*cuStreamBeginCapture)(CUstream, int mode);         /* _v2; mode 2 = relaxed */
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
  CUresult (*cuGraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long); /* WithFlags */
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuGraphDestroy)(CUgraph);
  /* A captured graph's kernel nodes, walked in launch order, and their
   * arguments changed in the instantiated graph (rt_graph_set_kernel;
   * optional). */
  CUresult (*cuGraphGetRootNodes)(CUgraph, CUgraphNode *, size_t *);
  CUresult (*cuGraphNodeGetDependentNodes)(CUgraphNode, CUgraphNode *, void *edge_data, size_t *); /* _v2 */
  CUresult (*cuGraphNodeGetType)(CUgraphNode, int *);
  CUresult (*cuGraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v2 *); /* _v2 */
  /* Whether a caller's stream is being captured (CUstreamCaptureStatus:
   * 0 none, 1 active, 2 invalidated; optional). */
  CUresult (*cuStreamIsCapturing)(CUstream, int *);
  /* A capture over several streams (exec.c, the program's kernels in
   * branches): a stream waits for another's event, and the node a
   * capturing stream last added is asked for (optional). */
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned int);
  CUresult (*cuStreamGetCaptureInfo)(CUstream, int *status, unsigned long long *id, CUgraph *graph,
                                     const CUgraphNode **deps, const void **edge_data, size_t *n_deps); /* _v3 */
} rt_cuda_api;

/* The loaded driver, or NULL with the reason in *err (see the top comment). */
const rt_cuda_api *rt_cuda(rt_err *err);
/* The file that was loaded ("libcuda.so.1"), or NULL before/without one. */
const char *rt_cuda_lib_name(void);

/* 0 when r is CUDA_SUCCESS; otherwise -1 with
 * "<call>: CUDA_ERROR_NAME (driver's description)" in *err, of kind
 * rt_cu_kind(r). */
int rt_cu_check(CUresult r, const char *call, rt_err *err);
/* RT_ERR_NO_DEVICE for the codes that mean no usable driver or GPU (a stub
 * library, no device, a driver mismatch), RT_ERR_CUDA for every other
 * failure (device memory exhausted included). */
rt_err_kind rt_cu_kind(CUresult r);
/* "CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)" for a code. */
void rt_cu_describe(CUresult r, kbc_buf *out);

#endif
