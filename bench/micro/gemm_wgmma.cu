// bench/micro/gemm_wgmma.cu — a stand-alone TF32 / 3xTF32 GEMM on wgmma (sm_90a), the first
// step of docs/GEMM_WGMMA.md: C[M][N] = A[M][K] . B[N][K]^T, both k-contiguous; 256 threads as two
// warpgroups, each 64 x 128 of a 128 x 128 tile; k-tiles of 32 copied by cp.async (16 bytes)
// into S stages laid out in core matrices (8 rows x 16 bytes, 8-row group g and 4-k chunk c at
// byte (g * 8 + c) * 128); wgmma m64n128k8 with both operands from shared memory (no swizzle:
// leading byte offset 128, stride byte offset 1024).  3xTF32: after a stage lands each thread
// writes the low parts (x - (x & ~0x1fff)) of the chunks it copied into a second tile of each
// operand; the tensor cores read the copied fp32 tile as the high part (they ignore the low 13
// mantissa bits); three wgmma a k8 step, the sums added into fp32 totals every 64 k.
// First run on the H200 (2026-12-03): correct, 74 TFLOP/s TF32 and 68 3xTF32 at 1024x8192x8192
// with every batch waited for; the PIPE variants (one batch in flight) written after, not yet run.
// It checks 512 sampled outputs against float64 and says so.
//   nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17 -o gemm_wgmma bench/micro/gemm_wgmma.cu && ./gemm_wgmma
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp16(unsigned dst, const void *src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// Pins an accumulator register across the asm statements around a wgmma batch (no copies of it
// that ptxas would see as non-wgmma reads of a register in flight).
__device__ __forceinline__ void fence_reg(float &r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void wg_wait1() { asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory"); }

// A shared-memory matrix descriptor: start address, leading and stride byte offsets (16-byte
// units), no swizzle.
__device__ __forceinline__ unsigned long long desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3ffff) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32);
}

// d (64 x 128, 64 registers a thread) += A (64 x 8) B (8 x 128), both from shared memory
__device__ __forceinline__ void wgmma_tf32(float *d, unsigned long long da, unsigned long long db, int scale_d = 1) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "l"(da), "l"(db), "r"(scale_d));
}

enum { BM = 128, BN = 128, BK = 32, TILE = BM * BK * 4 /* bytes of one operand tile */ };

// Stage layout (bytes): A, B, and with SPLIT3 A low, B low; each TILE bytes.
// PIPE: one wgmma batch left in flight (wait_group 1) while the next k-tile's is issued, the
// copies P = S - 2 tiles ahead (the stage of batch kt - 1 may still be read; that of kt - 2 is
// free once every warpgroup has passed its wait of iteration kt - 1, the barrier says so);
// without PIPE every batch is waited for (wait_group 0), copies S - 1 tiles ahead.
template <int S, bool SPLIT3, bool PIPE = false>
__global__ void __launch_bounds__(256, 1) gemm_wg(const float *__restrict__ A, const float *__restrict__ B,
                                                  float *__restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int TILES = SPLIT3 ? 4 : 2, STAGE = TILES * TILE;
  const int tid = threadIdx.x, wg = tid / 128, lane = tid % 32, warp4 = (tid / 32) % 4;
  const int tiles_n = N / BN;
  const int m0 = (blockIdx.x / tiles_n) * BM, n0 = (blockIdx.x % tiles_n) * BN;
  const unsigned base = smem_u32(smem);
  const int ktiles = K / BK;
  // this thread's chunks (4 of A, 4 of B per stage): chunk q = tid + 256 j: row r8 = q % 8 of
  // 8-row group g = q / 64, 4-k chunk c = q / 8 % 8
  auto chunk_off = [&](int j) {
    int q = tid + 256 * j;
    return ((q / 64) * 8 + q / 8 % 8) * 128 + q % 8 * 16;
  };
  auto chunk_row = [&](int j) { int q = tid + 256 * j; return q / 64 * 8 + q % 8; };
  auto chunk_k = [&](int j) { int q = tid + 256 * j; return q / 8 % 8 * 4; };
  auto load = [&](int kt, int st) {
    const unsigned s = base + st * STAGE;
#pragma unroll
    for (int j = 0; j < 4; j++) {
      cp16(s + chunk_off(j), A + (size_t)(m0 + chunk_row(j)) * K + kt * BK + chunk_k(j));
      cp16(s + TILE + chunk_off(j), B + (size_t)(n0 + chunk_row(j)) * K + kt * BK + chunk_k(j));
    }
  };
  float acc[64], tot[64];
#pragma unroll
  for (int i = 0; i < 64; i++) acc[i] = tot[i] = 0.f; // acc: overwritten by the first wgmma (scale-d 0)
  constexpr int P = PIPE ? S - 2 : S - 1; // tiles copied ahead
#pragma unroll
  for (int s = 0; s < P; s++) {
    if (s < ktiles) load(s, s);
    cp_commit();
  }
  for (int kt = 0; kt < ktiles; kt++) {
    const int st = kt % S;
    cp_wait<P - 1>();
    if (SPLIT3) { // the low parts of this thread's chunks, into the stage's second tiles
      unsigned char *s = smem + st * STAGE;
#pragma unroll
      for (int j = 0; j < 4; j++)
#pragma unroll
        for (int w = 0; w < 2; w++) {
          float4 v = *(float4 *)(s + w * TILE + chunk_off(j));
          float4 l;
          l.x = v.x - __uint_as_float(__float_as_uint(v.x) & 0xffffe000u);
          l.y = v.y - __uint_as_float(__float_as_uint(v.y) & 0xffffe000u);
          l.z = v.z - __uint_as_float(__float_as_uint(v.z) & 0xffffe000u);
          l.w = v.w - __uint_as_float(__float_as_uint(v.w) & 0xffffe000u);
          *(float4 *)(s + (2 + w) * TILE + chunk_off(j)) = l;
        }
    }
    fence_async_smem(); // this thread's shared writes (cp.async, the low parts) seen by wgmma
    __syncthreads();
    if (kt + P < ktiles) load(kt + P, (kt + P) % S); // its stage's wgmma waited for already
    cp_commit();
    const unsigned s = base + st * STAGE, a = s + wg * 8 * 1024;
#pragma unroll
    for (int i = 0; i < 64; i++) fence_reg(acc[i]);
    wg_fence();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      const unsigned ka = a + kk * 32, kb = s + TILE + kk * 32;
      // the first wgmma after a flush (and of the kernel) overwrites the accumulators (scale-d 0)
      const int fresh = kk == 0 && (SPLIT3 ? kt % 2 == 0 : kt == 0) ? 0 : 1;
      if (SPLIT3) {
        wgmma_tf32(acc, desc(ka + 2 * TILE, 128, 1024), desc(kb, 128, 1024), fresh); // A low x B high
        wgmma_tf32(acc, desc(ka, 128, 1024), desc(kb + 2 * TILE, 128, 1024));        // A high x B low
        wgmma_tf32(acc, desc(ka, 128, 1024), desc(kb, 128, 1024));
      } else {
        wgmma_tf32(acc, desc(ka, 128, 1024), desc(kb, 128, 1024), fresh);
      }
    }
    wg_commit();
#pragma unroll
    for (int i = 0; i < 64; i++) fence_reg(acc[i]);
    if (SPLIT3 && kt % 2 == 1) { // the totals every 64 k: every batch done first
      wg_wait0();
#pragma unroll
      for (int i = 0; i < 64; i++) tot[i] += acc[i]; // the next batch's first wgmma overwrites acc
    } else if (PIPE) {
      wg_wait1();
    } else {
      wg_wait0();
    }
  }
  wg_wait0();
  cp_wait<0>();
  // accumulator fragment: warp warp4 of the warpgroup holds rows 16 warp4 + g and + 8; n8 block
  // j: d[4j] (g, 8j + 2t), d[4j + 1] (g, 8j + 2t + 1), d[4j + 2] / d[4j + 3] the same at g + 8
  const int g = lane / 4, t = lane % 4, r = m0 + wg * 64 + warp4 * 16 + g;
#pragma unroll
  for (int j = 0; j < BN / 8; j++) {
    const int c = n0 + 8 * j + 2 * t;
    *(float2 *)&C[(size_t)r * N + c] = make_float2(acc[4 * j] + tot[4 * j], acc[4 * j + 1] + tot[4 * j + 1]);
    *(float2 *)&C[(size_t)(r + 8) * N + c] = make_float2(acc[4 * j + 2] + tot[4 * j + 2], acc[4 * j + 3] + tot[4 * j + 3]);
  }
}

__global__ void ref_kernel(const float *A, const float *B, const int *idx, double *out, int n, int K) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int m = idx[2 * i], c = idx[2 * i + 1];
  double s = 0;
  for (int k = 0; k < K; k++) s += (double)A[(size_t)m * K + k] * (double)B[(size_t)c * K + k];
  out[i] = s;
}

__global__ void fill(float *p, size_t n, unsigned seed) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  for (; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ seed;
    x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    p[i] = (x & 0xffffff) / 8388608.0f - 1.0f;
  }
}

template <int S, bool SPLIT3, bool PIPE = false>
void run(const char *name, int M, int N, int K, float *dA, float *dB, float *dC, const std::vector<int> &hidx,
         const std::vector<double> &href) {
  auto k = gemm_wg<S, SPLIT3, PIPE>;
  size_t smem = (size_t)S * (SPLIT3 ? 4 : 2) * TILE;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaFuncAttributes at;
  CK(cudaFuncGetAttributes(&at, k));
  dim3 grid((M / BM) * (N / BN));
  CK(cudaMemset(dC, 0, (size_t)M * N * 4));
  for (int w = 0; w < 3; w++) k<<<grid, 256, smem>>>(dA, dB, dC, M, N, K);
  CK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> ts;
  for (int r = 0; r < 15; r++) {
    cudaEventRecord(e0);
    k<<<grid, 256, smem>>>(dA, dB, dC, M, N, K);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms);
  }
  CK(cudaGetLastError());
  std::sort(ts.begin(), ts.end());
  double med = ts[ts.size() / 2] * 1e3, num = 0, den = 0;
  for (size_t i = 0; i < href.size(); i++) {
    float v;
    CK(cudaMemcpy(&v, dC + (size_t)hidx[2 * i] * N + hidx[2 * i + 1], 4, cudaMemcpyDeviceToHost));
    num += (v - href[i]) * (v - href[i]);
    den += href[i] * href[i];
  }
  printf("%-36s %3d regs %6zu B smem  %9.1f us  %6.1f TFLOP/s  relL2 %.2e\n", name, at.numRegs, smem, med,
         2.0 * M * N * (double)K / (med * 1e-6) / 1e12, sqrt(num / den));
}

int main() {
  int shapes[][3] = {{1024, 8192, 8192}, {4096, 4096, 4096}};
  for (auto &sh : shapes) {
    int M = sh[0], N = sh[1], K = sh[2], ns = 512;
    float *dA, *dB, *dC;
    CK(cudaMalloc(&dA, (size_t)M * K * 4));
    CK(cudaMalloc(&dB, (size_t)N * K * 4));
    CK(cudaMalloc(&dC, (size_t)M * N * 4));
    fill<<<1024, 256>>>(dA, (size_t)M * K, 1);
    fill<<<1024, 256>>>(dB, (size_t)N * K, 2);
    std::vector<int> hidx(2 * ns);
    srand(7);
    for (int i = 0; i < ns; i++) { hidx[2 * i] = rand() % M; hidx[2 * i + 1] = rand() % N; }
    int *didx; double *dref;
    CK(cudaMalloc(&didx, 8 * ns));
    CK(cudaMalloc(&dref, 8 * ns));
    CK(cudaMemcpy(didx, hidx.data(), 8 * ns, cudaMemcpyHostToDevice));
    ref_kernel<<<(ns + 127) / 128, 128>>>(dA, dB, didx, dref, ns, K);
    std::vector<double> href(ns);
    CK(cudaMemcpy(href.data(), dref, 8 * ns, cudaMemcpyDeviceToHost));
    printf("== M %d N %d K %d (A, B k-contiguous)\n", M, N, K);
    run<3, false>("wgmma tf32 128x128x32 S3", M, N, K, dA, dB, dC, hidx, href);
    run<4, false>("wgmma tf32 128x128x32 S4", M, N, K, dA, dB, dC, hidx, href);
    run<4, false, true>("wgmma tf32 128x128x32 S4 pipe", M, N, K, dA, dB, dC, hidx, href);
    run<6, false, true>("wgmma tf32 128x128x32 S6 pipe", M, N, K, dA, dB, dC, hidx, href);
    run<3, true>("wgmma 3xtf32 128x128x32 S3", M, N, K, dA, dB, dC, hidx, href);
    run<3, true, true>("wgmma 3xtf32 128x128x32 S3 pipe", M, N, K, dA, dB, dC, hidx, href);
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(didx); cudaFree(dref);
  }
  return 0;
}
