// bench/micro/gemm_wgmma.cu — a stand-alone TF32 / 3xTF32 GEMM on wgmma (sm_90a), the first
// step of docs/GEMM_WGMMA.md: C[M][N] = A[M][K] . B[N][K]^T, both k-contiguous; 256 threads as two
// warpgroups, each 64 x 128 of a 128 x 128 tile; k-tiles of 32 copied by cp.async (16 bytes)
// into S stages laid out in core matrices (8 rows x 16 bytes, 8-row group g and 4-k chunk c at
// byte (g * 8 + c) * 128); wgmma m64n128k8 with both operands from shared memory (no swizzle:
// leading byte offset 128, stride byte offset 1024).  3xTF32: after a stage lands each thread
// writes the low parts (x - (x & ~0x1fff)) of the chunks it copied into a second tile of each
// operand; the tensor cores read the copied fp32 tile as the high part (they ignore the low 13
// mantissa bits); three wgmma a k8 step, the sums added into fp32 totals every 64 k.
// H200 (2026-12-03, docs/results/2026-12-03-gemm-wgmma-sw128.txt): the layout decides.  In core
// matrices without swizzle 72-74 TFLOP/s TF32 whatever the pipelining (the wgmma's shared reads
// conflict); with the 128-byte swizzle (SW = 1: rows of BK = 32 floats, chunk c of row r at
// (c ^ r % 8) * 16) 128 x 256 S4 357 TFLOP/s (cuBLAS TF32 386 in the same run) and 3xTF32
// 128 x 128 S3 93 (cuBLAS FFMA SGEMM 49.6).  Accumulators pinned (fence_reg) after every wait:
// a read of them hoisted above the last wait serialized every wgmma (ptxas C7514).
// It checks 512 sampled outputs against float64 and says so.
//   nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17 -o gemm_wgmma bench/micro/gemm_wgmma.cu -lcublas && ./gemm_wgmma
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include <cublas_v2.h>

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
__device__ __forceinline__ unsigned long long desc(unsigned addr, unsigned lbo, unsigned sbo, int sw128 = 0) {
  return (unsigned long long)((addr & 0x3ffff) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | ((unsigned long long)sw128 << 62);
}

// d (64 x N, N / 2 registers a thread) += A (64 x 8) B (8 x N), both from shared memory
__device__ __forceinline__ void wgmma_tf32_n128(float *d, unsigned long long da, unsigned long long db, int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "l"(da), "l"(db), "r"(scale_d));
}
__device__ __forceinline__ void wgmma_tf32_n256(float *d, unsigned long long da, unsigned long long db, int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
               : "l"(da), "l"(db), "r"(scale_d));
}
template <int BN> __device__ __forceinline__ void wgmma_tf32(float *d, unsigned long long da, unsigned long long db, int scale_d = 1) {
  if constexpr (BN == 128) wgmma_tf32_n128(d, da, db, scale_d); else wgmma_tf32_n256(d, da, db, scale_d);
}

enum { BM = 128, BK = 32, TA = BM * BK * 4 /* bytes of the A tile */ };

// Stage layout (bytes): A (TA), B (TB), and with SPLIT3 A low, B low after them.
// PIPE: one wgmma batch left in flight (wait_group 1) while the next k-tile's is issued, the
// copies P = S - 2 tiles ahead (the stage of batch kt - 1 may still be read; that of kt - 2 is
// free once every warpgroup has passed its wait of iteration kt - 1, the barrier says so);
// without PIPE every batch is waited for (wait_group 0), copies S - 1 tiles ahead.
template <int BN, int S, bool SPLIT3, bool PIPE = false, int SW = 0>
__global__ void __launch_bounds__(256, 1) gemm_wg(const float *__restrict__ A, const float *__restrict__ B,
                                                  float *__restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int TB = BN * BK * 4, HALF = TA + TB, STAGE = SPLIT3 ? 2 * HALF : HALF;
  constexpr int CA = BM * BK / 4 / 256, CB = BN * BK / 4 / 256; // 16-byte chunks a thread copies
  constexpr int NACC = BN / 2;
  const int tid = threadIdx.x, wg = tid / 128, lane = tid % 32, warp4 = (tid / 32) % 4;
  const int tiles_n = N / BN;
  const int m0 = (blockIdx.x / tiles_n) * BM, n0 = (blockIdx.x % tiles_n) * BN;
  const unsigned base = smem_u32(smem);
  const int ktiles = K / BK;
  // chunk q = tid + 256 j: row r8 = q % 8 of 8-row group g = q / 64, 4-k chunk c = q / 8 % 8;
  // byte (g * 8 + c) * 128 + r8 * 16 of its tile
  // SW: 128-byte swizzle, a row's 8 chunks at row * 128 + (c ^ row % 8) * 16 (chunk q: row q / 8,
  // c = q % 8, a warp's 32 chunks 4 whole rows: coalesced reads, conflict-free writes)
  auto chunk_off = [&](int j) {
    int q = tid + 256 * j;
    return SW ? q / 8 * 128 + ((q % 8) ^ (q / 8 % 8)) * 16 : ((q / 64) * 8 + q / 8 % 8) * 128 + q % 8 * 16;
  };
  auto chunk_row = [&](int j) { int q = tid + 256 * j; return SW ? q / 8 : q / 64 * 8 + q % 8; };
  auto chunk_k = [&](int j) { int q = tid + 256 * j; return SW ? q % 8 * 4 : q / 8 % 8 * 4; };
  // descriptors: no swizzle, core matrices 128 B apart along k, 8-row groups 1024 B apart, a k8
  // step two core matrices (256 B); SW128, 8-row atoms 1024 B apart, a k8 step 32 B into the row
  constexpr unsigned KSTEP = SW ? 32 : 256, LBO = SW ? 16 : 128;
  auto load = [&](int kt, int st) {
    const unsigned s = base + st * STAGE;
#pragma unroll
    for (int j = 0; j < CA; j++) cp16(s + chunk_off(j), A + (size_t)(m0 + chunk_row(j)) * K + kt * BK + chunk_k(j));
#pragma unroll
    for (int j = 0; j < CB; j++) cp16(s + TA + chunk_off(j), B + (size_t)(n0 + chunk_row(j)) * K + kt * BK + chunk_k(j));
  };
  auto lowpart = [&](unsigned char *src, unsigned char *dst) {
    float4 v = *(float4 *)src, l;
    l.x = v.x - __uint_as_float(__float_as_uint(v.x) & 0xffffe000u);
    l.y = v.y - __uint_as_float(__float_as_uint(v.y) & 0xffffe000u);
    l.z = v.z - __uint_as_float(__float_as_uint(v.z) & 0xffffe000u);
    l.w = v.w - __uint_as_float(__float_as_uint(v.w) & 0xffffe000u);
    *(float4 *)dst = l;
  };
  float acc[NACC], tot[SPLIT3 ? NACC : 1];
#pragma unroll
  for (int i = 0; i < NACC; i++) acc[i] = 0.f; // overwritten by the first wgmma (scale-d 0)
#pragma unroll
  for (int i = 0; i < (SPLIT3 ? NACC : 1); i++) tot[i] = 0.f;
  constexpr int P = PIPE ? S - 2 : S - 1; // tiles copied ahead
#pragma unroll
  for (int s = 0; s < P; s++) {
    if (s < ktiles) load(s, s);
    cp_commit();
  }
  for (int kt = 0; kt < ktiles; kt++) {
    const int st = kt % S;
    cp_wait<P - 1>();
    if (SPLIT3) { // the low parts of this thread's chunks, into the stage's second half
      unsigned char *s = smem + st * STAGE;
#pragma unroll
      for (int j = 0; j < CA; j++) lowpart(s + chunk_off(j), s + HALF + chunk_off(j));
#pragma unroll
      for (int j = 0; j < CB; j++) lowpart(s + TA + chunk_off(j), s + HALF + TA + chunk_off(j));
    }
    fence_async_smem(); // this thread's shared writes (cp.async, the low parts) seen by wgmma
    __syncthreads();
    if (kt + P < ktiles) load(kt + P, (kt + P) % S); // its stage's wgmma waited for already
    cp_commit();
    const unsigned s = base + st * STAGE, a = s + wg * 8 * 1024;
#pragma unroll
    for (int i = 0; i < NACC; i++) fence_reg(acc[i]);
    wg_fence();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      const unsigned ka = a + kk / 8 * KSTEP, kb = s + TA + kk / 8 * KSTEP;
      // the first wgmma after a flush (and of the kernel) overwrites the accumulators (scale-d 0)
      const int fresh = kk == 0 && (SPLIT3 ? kt % 2 == 0 : kt == 0) ? 0 : 1;
      if (SPLIT3) {
        wgmma_tf32<BN>(acc, desc(ka + HALF, LBO, 1024, SW), desc(kb, LBO, 1024, SW), fresh); // A low x B high
        wgmma_tf32<BN>(acc, desc(ka, LBO, 1024, SW), desc(kb + HALF, LBO, 1024, SW));        // A high x B low
        wgmma_tf32<BN>(acc, desc(ka, LBO, 1024, SW), desc(kb, LBO, 1024, SW));
      } else {
        wgmma_tf32<BN>(acc, desc(ka, LBO, 1024, SW), desc(kb, LBO, 1024, SW), fresh);
      }
    }
    wg_commit();
#pragma unroll
    for (int i = 0; i < NACC; i++) fence_reg(acc[i]);
    if (SPLIT3 && kt % 2 == 1) { // the totals every 64 k: every batch done first
      wg_wait0();
#pragma unroll
      for (int i = 0; i < NACC; i++) fence_reg(acc[i]);
#pragma unroll
      for (int i = 0; i < (SPLIT3 ? NACC : 1); i++) tot[i] += acc[i]; // the next batch's first wgmma overwrites acc
    } else if (PIPE) {
      wg_wait1();
    } else {
      wg_wait0();
    }
  }
  wg_wait0();
#pragma unroll
  for (int i = 0; i < NACC; i++) fence_reg(acc[i]); // no read of acc moved above the wait
  cp_wait<0>();
  if (SPLIT3 && ktiles % 2 == 0) { // the last flush took every product: acc holds a stale batch
#pragma unroll
    for (int i = 0; i < NACC; i++) acc[i] = 0.f;
  }
  // accumulator fragment: warp warp4 of the warpgroup holds rows 16 warp4 + g and + 8; n8 block
  // j: d[4j] (g, 8j + 2t), d[4j + 1] (g, 8j + 2t + 1), d[4j + 2] / d[4j + 3] the same at g + 8
  const int g = lane / 4, t = lane % 4, r = m0 + wg * 64 + warp4 * 16 + g;
#pragma unroll
  for (int j = 0; j < BN / 8; j++) {
    const int c = n0 + 8 * j + 2 * t;
    float x0 = acc[4 * j], x1 = acc[4 * j + 1], x2 = acc[4 * j + 2], x3 = acc[4 * j + 3];
    if (SPLIT3) x0 += tot[4 * j], x1 += tot[4 * j + 1], x2 += tot[4 * j + 2], x3 += tot[4 * j + 3];
    *(float2 *)&C[(size_t)r * N + c] = make_float2(x0, x1);
    *(float2 *)&C[(size_t)(r + 8) * N + c] = make_float2(x2, x3);
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

template <int BN, int S, bool SPLIT3, bool PIPE = false, int SW = 0>
void run(const char *name, int M, int N, int K, float *dA, float *dB, float *dC, const std::vector<int> &hidx,
         const std::vector<double> &href) {
  auto k = gemm_wg<BN, S, SPLIT3, PIPE, SW>;
  size_t smem = (size_t)S * (SPLIT3 ? 2 : 1) * (TA + BN * BK * 4);
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

// cuBLAS in the same process: C (row-major M x N) = A B^T is, column-major, C^T = B A^T.
void run_cublas(const char *name, cublasHandle_t h, cublasComputeType_t ct, int M, int N, int K, float *dA, float *dB,
                float *dC) {
  const float one = 1.f, zero = 0.f;
  auto call = [&] {
    cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, dB, CUDA_R_32F, K, dA, CUDA_R_32F, K, &zero, dC, CUDA_R_32F,
                 N, ct, CUBLAS_GEMM_DEFAULT);
  };
  for (int w = 0; w < 3; w++) call();
  CK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> ts;
  for (int r = 0; r < 15; r++) {
    cudaEventRecord(e0); call(); cudaEventRecord(e1); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end());
  double med = ts[ts.size() / 2] * 1e3;
  printf("%-36s %9.1f us  %6.1f TFLOP/s\n", name, med, 2.0 * M * N * (double)K / (med * 1e-6) / 1e12);
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
    run<128, 4, false, true>("wgmma tf32 128x128x32 S4 pipe", M, N, K, dA, dB, dC, hidx, href);
    run<128, 4, false, true, 1>("wgmma tf32 128x128x32 S4 pipe sw128", M, N, K, dA, dB, dC, hidx, href);
    run<128, 6, false, true, 1>("wgmma tf32 128x128x32 S6 pipe sw128", M, N, K, dA, dB, dC, hidx, href);
    run<256, 3, false, true, 1>("wgmma tf32 128x256x32 S3 pipe sw128", M, N, K, dA, dB, dC, hidx, href);
    run<256, 4, false, true, 1>("wgmma tf32 128x256x32 S4 pipe sw128", M, N, K, dA, dB, dC, hidx, href);
    run<128, 3, true, false, 1>("wgmma 3xtf32 128x128x32 S3 sw128", M, N, K, dA, dB, dC, hidx, href);
    run<128, 3, true, true, 1>("wgmma 3xtf32 128x128x32 S3 pipe sw128", M, N, K, dA, dB, dC, hidx, href);
    cublasHandle_t h;
    cublasCreate(&h);
    run_cublas("cuBLAS TF32", h, CUBLAS_COMPUTE_32F_FAST_TF32, M, N, K, dA, dB, dC);
    run_cublas("cuBLAS FFMA", h, CUBLAS_COMPUTE_32F, M, N, K, dA, dB, dC);
    cublasDestroy(h);
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(didx); cudaFree(dref);
  }
  return 0;
}
