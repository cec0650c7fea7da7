// bench/micro/handoff.cu — what a stage boundary costs on this GPU (issue
// 15; docs/PERSISTENT.md, "What would make it pay", item 4).
//
// A chain of S stages; each stage has G tasks of 256 threads, task b
// reading W floats of its own weight slice (L2-resident after the first
// run) and one value the stage before wrote (task (7 b + 1) % G's), and
// writing one value.  The chain as:
//   graph:    S kernels of G blocks in a CUDA graph (kbc's default);
//   graph_pdl: the same launched with programmatic stream serialization,
//             each kernel opening with griddepcontrol.wait;
//   kbc:      one persistent kernel, the protocol codegen/persist.c
//             prints (tasks from a counter, one ahead; a stage's tasks
//             counted done with __threadfence + red.release; waits with
//             ld.acquire and __nanosleep(32));
//   rel:      the same without the __threadfence (red.release alone);
//   spin:     rel, polling without __nanosleep;
//   static:   block b takes task b of every stage (grid = G, all resident),
//             a counter a stage (red.release; ld.acquire spin);
//   coop:     a cooperative launch, grid.sync() between stages;
//   clusterC: one thread-block cluster of C blocks (8, 16) takes every
//             stage, block c its tasks c, c + C, ..., a cluster barrier
//             (barrier.cluster arrive.release / wait.acquire) between
//             stages: what a megakernel on one cluster's SMs would pay.
// Each the median of 50 timed runs (CUDA events) after 5 warm-ups; the
// outputs checked against the graph's.  Per stage = (time) / S.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o handoff bench/micro/handoff.cu && ./handoff
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cooperative_groups.h>
#include <cuda_runtime.h>

namespace cg = cooperative_groups;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1); } } while (0)

struct Args {
  const float *w; // [S][G][W]
  float *v;       // [S + 1][G]: v[0] the input
  int S, G, W;
};

// Task b of stage s: a block's sum of its weights plus the value before.
__device__ __forceinline__ void task(const Args &a, int s, int b) {
  __shared__ float part[8];
  const float *w = a.w + ((size_t)s * a.G + b) * a.W;
  float acc = 0.0f;
  for (int i = threadIdx.x; i < a.W; i += 256) acc += w[i];
  for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int i = 0; i < 8; i++) t += part[i];
    const float before = *(volatile const float *)&a.v[(size_t)s * a.G + (7 * b + 1) % a.G];
    a.v[(size_t)(s + 1) * a.G + b] = 0.5f * before + t;
  }
}

__global__ void __launch_bounds__(256) stage_kernel(Args a, int s) {
  task(a, s, blockIdx.x);
}

__global__ void __launch_bounds__(256) stage_kernel_pdl(Args a, int s) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  task(a, s, blockIdx.x);
}

__device__ __forceinline__ void done_fence(unsigned *c) {
  __threadfence();
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(c) : "memory");
}
__device__ __forceinline__ void done_rel(unsigned *c) {
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(c) : "memory");
}
template <int SLEEP> __device__ __forceinline__ void wait_for(const unsigned *c, unsigned n) {
  for (;;) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(c) : "memory");
    if (v >= n) break;
    if (SLEEP) __nanosleep(32);
  }
}

// kbc's protocol (codegen/persist.c): tasks in stage order from a counter,
// one asked for ahead; counters per stage, reset by the last block out.
// MODE 0: fence + release, sleep; 1: release, sleep; 2: release, spin.
template <int MODE>
__global__ void __launch_bounds__(256, 3) persist_kernel(Args a, unsigned *next, unsigned *done, unsigned *out) {
  __shared__ unsigned _task;
  __shared__ int _known_upto;
  unsigned ahead = 0;
  if (threadIdx.x == 0) { _task = atomicAdd(next, 1u); _known_upto = 0; }
  __syncthreads();
  const unsigned total = (unsigned)a.S * a.G;
  for (unsigned t = _task; t < total; t = _task) {
    if (threadIdx.x == 0) ahead = atomicAdd(next, 1u);
    const int s = t / a.G, b = t % a.G;
    if (threadIdx.x == 0 && s > 0 && _known_upto < s) {
      if (MODE == 2) wait_for<0>(&done[s - 1], a.G);
      else wait_for<1>(&done[s - 1], a.G);
      _known_upto = s;
    }
    __syncthreads();
    task(a, s, b);
    __syncthreads();
    if (threadIdx.x == 0) {
      if (MODE == 0) done_fence(&done[s]);
      else done_rel(&done[s]);
      _task = ahead;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0 && atomicAdd(out, 1u) == gridDim.x - 1u) {
    *next = 0u;
    *out = 0u;
    for (int i = 0; i < a.S; ++i) done[i] = 0u;
    __threadfence();
  }
}

// Block b takes task b of every stage: G blocks, all resident; the
// counters count up across launches (epoch: this launch's number).
__global__ void __launch_bounds__(256) static_kernel(Args a, unsigned *done, unsigned epoch) {
  for (int s = 0; s < a.S; s++) {
    if (s > 0) {
      if (threadIdx.x == 0) wait_for<0>(&done[s - 1], (epoch + 1) * (unsigned)a.G);
      __syncthreads();
    }
    task(a, s, blockIdx.x);
    __syncthreads();
    if (threadIdx.x == 0) done_rel(&done[s]);
  }
}

__global__ void __launch_bounds__(256) coop_kernel(Args a) {
  cg::grid_group g = cg::this_grid();
  for (int s = 0; s < a.S; s++) {
    if (s > 0) g.sync();
    task(a, s, blockIdx.x);
  }
}

__global__ void __launch_bounds__(256) cluster_kernel(Args a) {
  cg::cluster_group cl = cg::this_cluster();
  const int C = (int)cl.num_blocks(), c = (int)cl.block_rank();
  for (int s = 0; s < a.S; s++) {
    if (s > 0) cl.sync();
    for (int b = c; b < a.G; b += C) {
      task(a, s, b);
      __syncthreads();
    }
  }
}

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F> static float time_us(F run) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 5; i++) run();
  CK(cudaDeviceSynchronize());
  std::vector<float> ts;
  for (int i = 0; i < 50; i++) {
    CK(cudaEventRecord(e0));
    run();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    ts.push_back(ms * 1000.0f);
  }
  return median(ts);
}

int main(int argc, char **argv) {
  int S = argc > 1 ? atoi(argv[1]) : 45;
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs, %d stages\n", prop.name, sms, S);
  printf("%-10s %6s %6s %10s %10s\n", "variant", "G", "W", "total us", "per stage");
  const int Gs[] = {16, sms, 3 * sms};
  const int Ws[] = {0, 1024};
  for (int W : Ws)
    for (int G : Gs) {
      Args a{nullptr, nullptr, S, G, W};
      float *w, *v;
      size_t nw = (size_t)S * G * (W ? W : 1);
      CK(cudaMalloc(&w, nw * 4));
      CK(cudaMalloc(&v, (size_t)(S + 1) * G * 4));
      std::vector<float> hw(nw);
      for (size_t i = 0; i < nw; i++) hw[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
      CK(cudaMemcpy(w, hw.data(), nw * 4, cudaMemcpyHostToDevice));
      std::vector<float> hv((size_t)(S + 1) * G, 0.0f);
      for (int i = 0; i < G; i++) hv[i] = (float)i;
      CK(cudaMemcpy(v, hv.data(), hv.size() * 4, cudaMemcpyHostToDevice));
      a.w = w;
      a.v = v;
      unsigned *ctr;
      CK(cudaMalloc(&ctr, (2 + 2 * S) * 4));
      CK(cudaMemset(ctr, 0, (2 + 2 * S) * 4));
      std::vector<float> ref((size_t)G), got((size_t)G);
      auto check = [&](const char *name, float us) {
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(got.data(), v + (size_t)S * G, G * 4, cudaMemcpyDeviceToHost));
        double err = 0;
        for (int i = 0; i < G; i++) err = std::max(err, (double)fabsf(got[i] - ref[i]) / (fabsf(ref[i]) + 1e-6));
        printf("%-10s %6d %6d %10.2f %10.3f%s\n", name, G, W, us, us / S, err > 1e-5 ? "  WRONG" : "");
        CK(cudaMemset(v + G, 0, (size_t)S * G * 4));
      };
      // graph
      cudaStream_t st;
      CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
      for (int pdl = 0; pdl < 2; pdl++) {
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
        for (int s = 0; s < S; s++) {
          cudaLaunchConfig_t cfg = {};
          cfg.gridDim = dim3(G);
          cfg.blockDim = dim3(256);
          cfg.stream = st;
          cudaLaunchAttribute at[1];
          at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
          at[0].val.programmaticStreamSerializationAllowed = 1;
          cfg.attrs = at;
          cfg.numAttrs = pdl ? 1 : 0;
          if (pdl) CK(cudaLaunchKernelEx(&cfg, stage_kernel_pdl, a, s));
          else CK(cudaLaunchKernelEx(&cfg, stage_kernel, a, s));
        }
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        float us = time_us([&] { CK(cudaGraphLaunch(ge, 0)); });
        if (!pdl) {
          CK(cudaDeviceSynchronize());
          CK(cudaMemcpy(ref.data(), v + (size_t)S * G, G * 4, cudaMemcpyDeviceToHost));
        }
        check(pdl ? "graph_pdl" : "graph", us);
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
      }
      unsigned *next = ctr, *out = ctr + 1, *done = ctr + 2;
      int grid = 3 * sms;
      check("kbc", time_us([&] { persist_kernel<0><<<grid, 256>>>(a, next, done, out); }));
      check("rel", time_us([&] { persist_kernel<1><<<grid, 256>>>(a, next, done, out); }));
      check("spin", time_us([&] { persist_kernel<2><<<grid, 256>>>(a, next, done, out); }));
      int per_sm = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, static_kernel, 256, 0));
      if (G <= per_sm * sms) {
        CK(cudaMemset(done, 0, S * 4));
        unsigned epoch = 0;
        check("static", time_us([&] { static_kernel<<<G, 256>>>(a, done, epoch++); }));
        void *args[] = {&a};
        check("coop", time_us([&] { CK(cudaLaunchCooperativeKernel((void *)coop_kernel, dim3(G), dim3(256), args, 0, 0)); }));
      }
      for (int C = 8; C <= 16; C *= 2) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(C);
        cfg.blockDim = dim3(256);
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeClusterDimension;
        at[0].val.clusterDim.x = C;
        at[0].val.clusterDim.y = 1;
        at[0].val.clusterDim.z = 1;
        cfg.attrs = at;
        cfg.numAttrs = 1;
        if (C > 8 && cudaFuncSetAttribute(cluster_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
          printf("cluster%d: not allowed\n", C);
          break;
        }
        char name[16];
        snprintf(name, sizeof name, "cluster%d", C);
        check(name, time_us([&] { CK(cudaLaunchKernelEx(&cfg, cluster_kernel, a)); }));
      }
      CK(cudaFree(w));
      CK(cudaFree(v));
      CK(cudaFree(ctr));
      CK(cudaStreamDestroy(st));
    }
  return 0;
}
