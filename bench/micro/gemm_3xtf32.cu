// bench/micro/gemm_3xtf32.cu — a stand-alone GEMM main loop, the experiment
// behind codegen/gemm_vec.c: C[M][N] = A[M][K] . B[N][K]^T (both k-contiguous),
// 3xTF32 (or TF32) mma.sync m16n8k8 over shared tiles [row][BK + 4] filled by
// 16-byte cp.async copies in S stages, fragments read by ldmatrix (LDM) or a
// float at a time, operands split into high and low TF32 parts at use, the
// tensor cores' sums added into fp32 totals every 64 k.  Tile shapes, stages
// and blocks per SM are template parameters; each configuration is timed
// (CUDA events, median of 15 after 3 warm-ups) and checked on 512 sampled
// outputs against float64.  Sizes must be multiples of the tiles (no edges).
//   nvcc -O3 -arch=sm_90 -std=c++17 -o gemm_3xtf32 bench/micro/gemm_3xtf32.cu && ./gemm_3xtf32
// Results (H200, 2026-12-03): docs/results/2026-12-03-gemm-vec.txt.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp16(unsigned dst, const void *src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n"); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
__device__ __forceinline__ void ldm4(unsigned addr, unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ void mma(float *d, const unsigned *a, const unsigned *b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ unsigned rna(float x) { unsigned u; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(x)); return u; }

template <int BM, int BN, int BK, int WM, int WN, int S, int MINB, bool SPLIT3, bool LDM>
__global__ void __launch_bounds__(256, MINB) gemm_tn(const float *__restrict__ A, const float *__restrict__ B,
                                                     float *__restrict__ C, int M, int N, int K) {
  constexpr int LD = BK + 4;
  constexpr int MI = BM / WM / 16, NI = BN / WN / 8;
  constexpr int FLUSH = 64 / BK > 0 ? 64 / BK : 1;
  extern __shared__ __align__(16) float smem[];
  float *As = smem, *Bs = smem + S * BM * LD;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t4 = lane % 4;
  const int wm0 = (warp / WN) * (BM / WM), wn0 = (warp % WN) * (BN / WN);
  const int tiles_n = N / BN;
  const int m0 = (blockIdx.x / tiles_n) * BM, n0 = (blockIdx.x % tiles_n) * BN;
  const int ktiles = K / BK;
  const unsigned sA = smem_u32(As), sB = smem_u32(Bs);
  auto load = [&](int kt, int st) {
    const int kb = kt * BK;
#pragma unroll
    for (int c = tid; c < BM * BK / 4; c += 256) {
      int r = c / (BK / 4), q = c % (BK / 4);
      cp16(sA + 4 * (st * BM * LD + r * LD + q * 4), A + (size_t)(m0 + r) * K + kb + q * 4);
    }
#pragma unroll
    for (int c = tid; c < BN * BK / 4; c += 256) {
      int r = c / (BK / 4), q = c % (BK / 4);
      cp16(sB + 4 * (st * BN * LD + r * LD + q * 4), B + (size_t)(n0 + r) * K + kb + q * 4);
    }
  };
  float acc[MI][NI][4], tot[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; i++)
#pragma unroll
    for (int j = 0; j < NI; j++)
#pragma unroll
      for (int q = 0; q < 4; q++) acc[i][j][q] = tot[i][j][q] = 0.f;
#pragma unroll
  for (int s = 0; s < S - 1; s++) {
    if (s < ktiles) load(s, s);
    cp_commit();
  }
  // ldmatrix lane addresses (byte offsets within a stage)
  const int a_row = (lane % 8) + ((lane / 8) & 1) * 8, a_col = (lane / 16) * 4;
  const int b_row = (lane % 8) + (lane / 16) * 8, b_col = ((lane / 8) & 1) * 4;
  int cur = 0, nxt = S - 1;
  for (int kt = 0; kt < ktiles; kt++) {
    cp_wait<S - 2>();
    __syncthreads();
    if (kt + S - 1 < ktiles) load(kt + S - 1, nxt);
    cp_commit();
    const float *as = As + cur * BM * LD, *bs = Bs + cur * BN * LD;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      unsigned fa[MI][4], fb[NI][2];
      if (LDM) {
#pragma unroll
        for (int i = 0; i < MI; i++)
          ldm4(sA + 4 * (cur * BM * LD + (wm0 + i * 16 + a_row) * LD + kk + a_col), fa[i][0], fa[i][1], fa[i][2], fa[i][3]);
#pragma unroll
        for (int j = 0; j < NI; j += 2)
          ldm4(sB + 4 * (cur * BN * LD + (wn0 + j * 8 + b_row) * LD + kk + b_col), fb[j][0], fb[j][1], fb[j + 1][0],
               fb[j + 1][1]);
      } else {
#pragma unroll
        for (int i = 0; i < MI; i++) {
          const float *p = as + (wm0 + i * 16 + g) * LD + kk + t4;
          fa[i][0] = __float_as_uint(p[0]);
          fa[i][1] = __float_as_uint(p[8 * LD]);
          fa[i][2] = __float_as_uint(p[4]);
          fa[i][3] = __float_as_uint(p[8 * LD + 4]);
        }
#pragma unroll
        for (int j = 0; j < NI; j++) {
          const float *p = bs + (wn0 + j * 8 + g) * LD + kk + t4;
          fb[j][0] = __float_as_uint(p[0]);
          fb[j][1] = __float_as_uint(p[4]);
        }
      }
      if (SPLIT3) {
        unsigned fal[MI][4], fbl[NI][2];
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
          for (int q = 0; q < 4; q++) {
            unsigned h = fa[i][q] & 0xffffe000u;
            fal[i][q] = __float_as_uint(__uint_as_float(fa[i][q]) - __uint_as_float(h));
            fa[i][q] = h;
          }
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
          for (int q = 0; q < 2; q++) {
            unsigned h = fb[j][q] & 0xffffe000u;
            fbl[j][q] = __float_as_uint(__uint_as_float(fb[j][q]) - __uint_as_float(h));
            fb[j][q] = h;
          }
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
          for (int j = 0; j < NI; j++) mma(acc[i][j], fal[i], fb[j]);
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
          for (int j = 0; j < NI; j++) mma(acc[i][j], fa[i], fbl[j]);
      }
#pragma unroll
      for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++) mma(acc[i][j], fa[i], fb[j]);
    }
    if (SPLIT3 && (kt % FLUSH) == FLUSH - 1) {
#pragma unroll
      for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
          for (int q = 0; q < 4; q++) { tot[i][j][q] += acc[i][j][q]; acc[i][j][q] = 0.f; }
    }
    cur = cur == S - 1 ? 0 : cur + 1;
    nxt = nxt == S - 1 ? 0 : nxt + 1;
  }
  cp_wait<0>();
#pragma unroll
  for (int i = 0; i < MI; i++)
#pragma unroll
    for (int j = 0; j < NI; j++) {
      int r = m0 + wm0 + i * 16 + g, c = n0 + wn0 + j * 8 + 2 * t4;
      float2 v0 = make_float2(acc[i][j][0] + tot[i][j][0], acc[i][j][1] + tot[i][j][1]);
      float2 v1 = make_float2(acc[i][j][2] + tot[i][j][2], acc[i][j][3] + tot[i][j][3]);
      *(float2 *)&C[(size_t)r * N + c] = v0;
      *(float2 *)&C[(size_t)(r + 8) * N + c] = v1;
    }
}

__global__ void ref_kernel(const float *A, const float *B, const int *idx, double *out, int n, int N, int K) {
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

struct Ctx { int M, N, K; float *A, *B, *C; int *idx; double *ref; std::vector<int> hidx; std::vector<double> href; int ns; };

template <int BM, int BN, int BK, int WM, int WN, int S, int MINB, bool SPLIT3, bool LDM>
void run(const char *name, Ctx &c) {
  auto k = gemm_tn<BM, BN, BK, WM, WN, S, MINB, SPLIT3, LDM>;
  size_t smem = (size_t)S * (BM + BN) * (BK + 4) * 4;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaFuncAttributes at;
  CK(cudaFuncGetAttributes(&at, k));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, 256, smem));
  if (c.M % BM || c.N % BN || c.K % BK) { printf("%-40s skip\n", name); return; }
  dim3 grid((c.M / BM) * (c.N / BN));
  CK(cudaMemset(c.C, 0, (size_t)c.M * c.N * 4));
  for (int w = 0; w < 3; w++) k<<<grid, 256, smem>>>(c.A, c.B, c.C, c.M, c.N, c.K);
  CK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> ts;
  for (int r = 0; r < 15; r++) {
    cudaEventRecord(e0);
    k<<<grid, 256, smem>>>(c.A, c.B, c.C, c.M, c.N, c.K);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms);
  }
  CK(cudaGetLastError());
  std::sort(ts.begin(), ts.end());
  double med = ts[ts.size() / 2] * 1e3;
  // check sampled outputs
  std::vector<float> hc(c.ns);
  double num = 0, den = 0;
  for (int i = 0; i < c.ns; i++) {
    float v;
    CK(cudaMemcpy(&v, c.C + (size_t)c.hidx[2 * i] * c.N + c.hidx[2 * i + 1], 4, cudaMemcpyDeviceToHost));
    num += (v - c.href[i]) * (v - c.href[i]);
    den += c.href[i] * c.href[i];
  }
  double tf = 2.0 * c.M * c.N * (double)c.K / (med * 1e-6) / 1e12;
  printf("%-44s %3d regs %2d blk/SM %6zu B smem  %9.1f us  %6.1f TFLOP/s  relL2 %.2e\n", name, at.numRegs, occ, smem, med, tf,
         sqrt(num / den));
}

int main(int argc, char **argv) {
  int shapes[][3] = {{1024, 8192, 8192}, {4096, 4096, 4096}};
  for (auto &sh : shapes) {
    Ctx c;
    c.M = sh[0]; c.N = sh[1]; c.K = sh[2]; c.ns = 512;
    CK(cudaMalloc(&c.A, (size_t)c.M * c.K * 4));
    CK(cudaMalloc(&c.B, (size_t)c.N * c.K * 4));
    CK(cudaMalloc(&c.C, (size_t)c.M * c.N * 4));
    fill<<<1024, 256>>>(c.A, (size_t)c.M * c.K, 1);
    fill<<<1024, 256>>>(c.B, (size_t)c.N * c.K, 2);
    c.hidx.resize(2 * c.ns);
    srand(7);
    for (int i = 0; i < c.ns; i++) { c.hidx[2 * i] = rand() % c.M; c.hidx[2 * i + 1] = rand() % c.N; }
    CK(cudaMalloc(&c.idx, 8 * c.ns));
    CK(cudaMalloc(&c.ref, 8 * c.ns));
    CK(cudaMemcpy(c.idx, c.hidx.data(), 8 * c.ns, cudaMemcpyHostToDevice));
    ref_kernel<<<(c.ns + 127) / 128, 128>>>(c.A, c.B, c.idx, c.ref, c.ns, c.N, c.K);
    c.href.resize(c.ns);
    CK(cudaMemcpy(c.href.data(), c.ref, 8 * c.ns, cudaMemcpyDeviceToHost));
    printf("== M %d N %d K %d (A, B k-contiguous)\n", c.M, c.N, c.K);
    run<64, 128, 32, 2, 4, 3, 2, true, true>("3x 64x128x32 w32x32 S3 mb2 ldm", c);
    run<64, 128, 32, 2, 4, 3, 2, true, false>("3x 64x128x32 w32x32 S3 mb2 lds", c);
    run<64, 128, 16, 2, 4, 4, 2, true, true>("3x 64x128x16 w32x32 S4 mb2 ldm", c);
    run<128, 64, 32, 4, 2, 3, 2, true, true>("3x 128x64x32 w32x32 S3 mb2 ldm", c);
    run<128, 128, 32, 2, 4, 3, 1, true, true>("3x 128x128x32 w64x32 S3 mb1 ldm", c);
    run<128, 128, 32, 4, 2, 3, 1, true, true>("3x 128x128x32 w32x64 S3 mb1 ldm", c);
    run<128, 128, 16, 2, 4, 4, 1, true, true>("3x 128x128x16 w64x32 S4 mb1 ldm", c);
    run<128, 128, 32, 2, 4, 4, 1, true, true>("3x 128x128x32 w64x32 S4 mb1 ldm", c);
    run<64, 128, 32, 2, 4, 4, 2, true, true>("3x 64x128x32 w32x32 S4 mb2 ldm", c);
    run<64, 64, 32, 2, 4, 4, 3, true, true>("3x 64x64x32 w32x16 S4 mb3 ldm", c);
    run<64, 128, 32, 2, 4, 3, 2, false, true>("tf32 64x128x32 w32x32 S3 mb2 ldm", c);
    run<128, 128, 32, 2, 4, 3, 1, false, true>("tf32 128x128x32 w64x32 S3 mb1 ldm", c);
    run<128, 256, 32, 2, 4, 3, 1, false, true>("tf32 128x256x32 w64x64 S3 mb1 ldm", c);
    cudaFree(c.A); cudaFree(c.B); cudaFree(c.C); cudaFree(c.idx); cudaFree(c.ref);
  }
  return 0;
}
