// bench/micro/colsum.cu — a reduction over a middle dimension, out[b][j] =
// sum_i x[b][i][j] (KernelBench L1/47: 128 x 4096 x 4095, where kbc's rows
// kernel ran at 0.84x eager on the H100), in several shapes of kernel:
//   t1:    one thread per output, 256 along j, the sum serial (kbc's rows
//          kernel today), unrolled 8;
//   t1u16: the same, unrolled 16, two partial sums;
//   y<W>x<G>: a block of W threads along j times G groups along i (rows
//          interleaved), the groups' sums added through shared memory
//          (PyTorch's shape for a reduction over a non-contiguous dim);
//   kbc<G>u<U>[w<W>]: kbc's rows kernel with the team apart, as generated
//          (kbc_apart below); a2: two accumulators (rows i and i + G), as
//          ygx; g: its grid capped at 64 blocks a multiprocessor, as ygx;
//   kbc_gen_g, form*_g: kbc's own generated kernel for L1/47 (unrolled 4, as
//          it was before session 34's pair loop went unrolled 1), and its loop
//          in other forms (128 x 4096 x 4095 only).
// Each timed by CUDA events (median of 15 after 3 warm-ups), checked against
// a float64 sum of 256 sampled outputs; the DRAM floor printed beside.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o colsum bench/micro/colsum.cu && ./colsum [B I J]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1); } } while (0)

__global__ void __launch_bounds__(256) t1(const float *__restrict__ x, float *out, int B, int I, int J) {
  const int n = B * J;
  for (int o = blockIdx.x * 256 + threadIdx.x; o < n; o += gridDim.x * 256) {
    const int b = o / J, j = o % J;
    float acc = 0.0f;
    for (int i0 = 0; i0 < I; i0 += 64) {
      float part = 0.0f;
#pragma unroll 8
      for (int i = i0; i < min(i0 + 64, I); ++i) part += x[((size_t)b * I + i) * J + j];
      acc += part;
    }
    out[o] = acc;
  }
}

__global__ void __launch_bounds__(256) t1u16(const float *__restrict__ x, float *out, int B, int I, int J) {
  const int n = B * J;
  for (int o = blockIdx.x * 256 + threadIdx.x; o < n; o += gridDim.x * 256) {
    const int b = o / J, j = o % J;
    const float *p = x + (size_t)b * I * J + j;
    float a0 = 0.0f, a1 = 0.0f;
    int i = 0;
    for (; i + 16 <= I; i += 16) {
      float v[16];
#pragma unroll
      for (int q = 0; q < 16; ++q) v[q] = __ldg(p + (size_t)(i + q) * J);
#pragma unroll
      for (int q = 0; q < 16; q += 2) a0 += v[q], a1 += v[q + 1];
    }
    for (; i < I; ++i) a0 += p[(size_t)i * J];
    out[o] = a0 + a1;
  }
}

// W threads along j, G along i; the block's G partial sums of each column through shared memory
template <int W, int G>
__global__ void __launch_bounds__(W * G) ygx(const float *__restrict__ x, float *out, int B, int I, int J) {
  __shared__ float s[G][W + 1];
  const int tj = threadIdx.x % W, ti = threadIdx.x / W;
  const int cols = (J + W - 1) / W, tiles = B * cols;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int b = t / cols, j = t % cols * W + tj;
    float a0 = 0.0f, a1 = 0.0f;
    if (j < J) {
      const float *p = x + (size_t)b * I * J + j;
      int i = ti;
#pragma unroll 4
      for (; i + G < I; i += 2 * G) a0 += __ldg(p + (size_t)i * J), a1 += __ldg(p + (size_t)(i + G) * J);
      if (i < I) a0 += __ldg(p + (size_t)i * J);
    }
    s[ti][tj] = a0 + a1;
    __syncthreads();
    if (ti == 0 && j < J) {
      float r = 0.0f;
#pragma unroll
      for (int g = 0; g < G; ++g) r += s[g][tj];
      out[(size_t)b * J + j] = r;
    }
    __syncthreads();
  }
}

// kbc's rows kernel with its team apart (KBC_ROWS_ACROSS=2: W columns a block, G threads a
// column): a grid-stride loop over the blocks' columns (kbc caps its grid at 16 blocks a
// multiprocessor), each thread's column clamped to the last, one accumulator over a loop
// unrolled U, the G sums through shared memory; beside ygx it tells which of them costs
// (session 33: kbc's 1.038 / 0.949 of a thread a column at U 4 / 8, ygx's 0.86).
template <int W, int G, int U, int A = 1>
__global__ void __launch_bounds__(W * G) kbc_apart(const float *__restrict__ x, float *out, int B, int I, int J) {
  __shared__ float red[W * G];
  const int lane = threadIdx.x / W, n = B * J;
  for (int ob = blockIdx.x * W; ob < n; ob += gridDim.x * W) {
    const int o = ob + (int)threadIdx.x % W < n ? ob + (int)threadIdx.x % W : n - 1;
    const int b = o / J, j = o % J;
    float acc = 0.0f, acc1 = 0.0f;
    int i = lane;
    if (A == 2) {
#pragma unroll U
      for (; i + G < I; i += 2 * G) acc = acc + x[((size_t)b * I + i) * J + j], acc1 = acc1 + x[((size_t)b * I + i + G) * J + j];
    }
#pragma unroll U
    for (; i < I; i += G) acc = acc + x[((size_t)b * I + i) * J + j];
    acc += acc1;
    red[threadIdx.x] = acc;
    __syncthreads();
    acc = red[threadIdx.x % W];
    for (int w = 1; w < G; ++w) acc += red[w * W + threadIdx.x % W];
    __syncthreads();
    if (lane == 0) out[o] = acc;
    __syncthreads();
  }
}

// kbc's kernel for L1/47 as generated (session 34: 8 threads a column a warp apart, two partial
// sums, its sum into the workspace's out_red, then copied to out), pasted verbatim but for
// its name.  With kbc_form below and beside kbc8u4a2g they told why kbc's kernel ran 3,361
// us on the H100 where kbc8u4a2g ran 3,141: the unrolling (H100, one run: kbc_gen 3,512,
// kbc_form<0, 4> 3,654, <1, 4> 3,686, <2, 4> 3,017, <3, 4> 3,673, <0, 1> 3,014, <0, 2>
// 3,212; t1 3,515, y64x4 2,980).  The constant bounds let the loop unroll whole: eight
// loads a thread in flight, from rows 8 apart, ran slower than two.
extern "C" __global__ void __launch_bounds__(256)
kbc_gen(const float *__restrict__ x,
    float *out,
    float *out_red)
{
  const int _lane = threadIdx.x / 32; // the team's threads 32 apart
  __shared__ float _red[256];
  const int _n = 524160;
  for (int _ob = (int)blockIdx.x * 32; _ob < _n; _ob += (int)gridDim.x * 32) {
    const int _o = _ob + threadIdx.x % 32 < _n ? _ob + threadIdx.x % 32 : _n - 1;
    int _p = _o;
    const int _o1 = _p % 4095;
    _p /= 4095;
    const int _o0 = _p;
    { // out.red[b, j] = sum(i: x[b, i, j])
      const int b = _o0;
      const int j = _o1;
      float _acc0 = 0.0f;
      float _acc2 = 0.0f;
      int _q1 = _lane;
      #pragma unroll 4
      for (; _q1 + 8 < 4096; _q1 += 16) {
        {
          const int i = _q1;
          _acc0 = _acc0 + x[((b) * 4096 + i) * 4095 + j];
        }
        {
          const int i = _q1 + 8;
          _acc2 = _acc2 + x[((b) * 4096 + i) * 4095 + j];
        }
      }
      if (_q1 < 4096) {
        const int i = _q1;
        _acc0 = _acc0 + x[((b) * 4096 + i) * 4095 + j];
      }
      _acc0 = _acc0 + _acc2;
      _red[threadIdx.x] = _acc0;
      __syncthreads();
      _acc0 = _red[threadIdx.x % 32];
      for (int _w = 1; _w < 8; ++_w) _acc0 = _acc0 + _red[_w * 32 + threadIdx.x % 32];
      __syncthreads();
      if (_lane == 0) out_red[(b) * 4095 + j] = _acc0;
    }
    __syncthreads();
    { // out[b, o, j] = out.red[b, j]
      const int b = _o0;
      const int j = _o1;
      const float _h4 = __ldca(&out_red[(b) * 4095 + j]); // invariant in the loop below
      #pragma unroll 4
      for (int o = _lane; o < 1; o += 8) {
        out[((b) * 1 + o) * 4095 + j] = _h4;
      }
    }
    __syncthreads();
  }
}

// kbc_gen's loop storing out itself (no out_red, no copy) in four forms, unrolled U, to
// tell which of kbc's text costs: M 0, as kbc writes it (32-bit index, the sizes constants);
// M 1, the index in 64 bits (size_t); M 2, in 32 bits but the sizes runtime values (I, J);
// M 3, a row pointer stepped by 16 rows (flat_pointers' form).
// The 8 threads' sums of a column (32 apart) added in lane order, lane 0 storing them.
__device__ void team8_store(float acc, float *red, float *out, int o) {
  red[threadIdx.x] = acc;
  __syncthreads();
  acc = red[threadIdx.x % 32];
  for (int w = 1; w < 8; ++w) acc += red[w * 32 + threadIdx.x % 32];
  __syncthreads();
  if (threadIdx.x < 32) out[o] = acc;
}

template <int M, int U>
__global__ void __launch_bounds__(256) kbc_form(const float *__restrict__ x, float *out, int B, int I, int J) {
  const int _lane = threadIdx.x / 32;
  __shared__ float _red[256];
  const int _n = M == 2 ? B * J : 524160;
  for (int _ob = (int)blockIdx.x * 32; _ob < _n; _ob += (int)gridDim.x * 32) {
    const int _o = _ob + threadIdx.x % 32 < _n ? _ob + threadIdx.x % 32 : _n - 1;
    float _acc0 = 0.0f, _acc2 = 0.0f;
    int _q1 = _lane;
    if (M == 0) {
      const int j = _o % 4095, b = _o / 4095;
#pragma unroll U
      for (; _q1 + 8 < 4096; _q1 += 16) {
        _acc0 = _acc0 + x[((b) * 4096 + _q1) * 4095 + j];
        _acc2 = _acc2 + x[((b) * 4096 + _q1 + 8) * 4095 + j];
      }
      if (_q1 < 4096) _acc0 = _acc0 + x[((b) * 4096 + _q1) * 4095 + j];
    } else if (M == 1) {
      const size_t j = _o % 4095, b = _o / 4095;
#pragma unroll U
      for (; _q1 + 8 < 4096; _q1 += 16) {
        _acc0 = _acc0 + x[(b * 4096 + _q1) * 4095 + j];
        _acc2 = _acc2 + x[(b * 4096 + _q1 + 8) * 4095 + j];
      }
      if (_q1 < 4096) _acc0 = _acc0 + x[(b * 4096 + _q1) * 4095 + j];
    } else if (M == 2) {
      const int j = _o % J, b = _o / J;
#pragma unroll U
      for (; _q1 + 8 < I; _q1 += 16) {
        _acc0 = _acc0 + x[(b * I + _q1) * J + j];
        _acc2 = _acc2 + x[(b * I + _q1 + 8) * J + j];
      }
      if (_q1 < I) _acc0 = _acc0 + x[(b * I + _q1) * J + j];
    } else {
      const int j = _o % 4095, b = _o / 4095;
      const float *_row = x + (size_t)b * 4096 * 4095 + j;
#pragma unroll U
      for (; _q1 + 8 < 4096; _q1 += 16) {
        _acc0 = _acc0 + _row[_q1 * 4095];
        _acc2 = _acc2 + _row[(_q1 + 8) * 4095];
      }
      if (_q1 < 4096) _acc0 = _acc0 + _row[_q1 * 4095];
    }
    team8_store(_acc0 + _acc2, _red, out, _o);
  }
}

typedef void (*kern)(const float *, float *, int, int, int);

int main(int argc, char **argv) {
  int B = argc > 3 ? atoi(argv[1]) : 128, I = argc > 3 ? atoi(argv[2]) : 4096, J = argc > 3 ? atoi(argv[3]) : 4095;
  size_t n = (size_t)B * I * J;
  std::vector<float> h(n);
  unsigned s = 12345;
  for (size_t e = 0; e < n; e++) s = s * 1664525u + 1013904223u, h[e] = (float)((s >> 8) & 0xffff) / 65536.0f - 0.5f;
  float *x, *out;
  CK(cudaMalloc(&x, n * 4));
  CK(cudaMalloc(&out, (size_t)B * J * 4));
  CK(cudaMemcpy(x, h.data(), n * 4, cudaMemcpyHostToDevice));
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int gen = B == 128 && I == 4096 && J == 4095; // kbc_gen's sizes are constants
  float *red;
  CK(cudaMalloc(&red, (size_t)B * J * 4));
  struct { const char *name; kern k; int block; long long grid; } ks[] = {
      {"t1", t1, 256, ((long long)B * J + 255) / 256},
      {"t1u16", t1u16, 256, ((long long)B * J + 255) / 256},
      {"y32x8", ygx<32, 8>, 256, (long long)B * ((J + 31) / 32)},
      {"y32x16", ygx<32, 16>, 512, (long long)B * ((J + 31) / 32)},
      {"y64x4", ygx<64, 4>, 256, (long long)B * ((J + 63) / 64)},
      {"y128x2", ygx<128, 2>, 256, (long long)B * ((J + 127) / 128)},
      {"y32x32", ygx<32, 32>, 1024, (long long)B * ((J + 31) / 32)},
      {"kbc8u4", kbc_apart<32, 8, 4>, 256, (long long)B * J / 32 + 1},
      {"kbc8u8", kbc_apart<32, 8, 8>, 256, (long long)B * J / 32 + 1},
      {"kbc4u8w64", kbc_apart<64, 4, 8>, 256, (long long)B * J / 64 + 1},
      {"kbc8u4a2", kbc_apart<32, 8, 4, 2>, 256, (long long)B * J / 32 + 1},
      {"kbc8u8g", kbc_apart<32, 8, 8>, 256, (long long)B * J / 32 + 1}, // grid capped at 64 a multiprocessor
      {"kbc8u4a2g", kbc_apart<32, 8, 4, 2>, 256, (long long)B * J / 32 + 1},
      {"kbc_gen_g", nullptr, 256, (long long)B * J / 32 + 1}, // kbc_gen
      {"form_g", kbc_form<0, 4>, 256, (long long)B * J / 32 + 1},
      {"form64_g", kbc_form<1, 4>, 256, (long long)B * J / 32 + 1},
      {"formrt_g", kbc_form<2, 4>, 256, (long long)B * J / 32 + 1},
      {"formrow_g", kbc_form<3, 4>, 256, (long long)B * J / 32 + 1},
      {"formu1_g", kbc_form<0, 1>, 256, (long long)B * J / 32 + 1},
      {"formu2_g", kbc_form<0, 2>, 256, (long long)B * J / 32 + 1},
  };
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> o((size_t)B * J);
  printf("colsum %d x %d x %d: %.2f GB, %d SMs\n", B, I, J, n * 4 / 1e9, sms);
  for (auto &k : ks) {
    if ((!k.k || !strncmp(k.name, "form", 4)) && !gen) continue;
    long long grid = std::min(k.grid, (long long)sms * (strncmp(k.name, "kbc", 3) || k.name[strlen(k.name) - 1] == 'g' ? 64 : 16)); // kbc's cap: 16 a multiprocessor
    std::vector<float> t;
    for (int r = 0; r < 18; r++) {
      CK(cudaEventRecord(e0));
      if (k.k) k.k<<<(unsigned)grid, k.block>>>(x, out, B, I, J);
      else kbc_gen<<<(unsigned)grid, 256>>>(x, out, red);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (r >= 3) t.push_back(ms * 1000);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    CK(cudaMemcpy(o.data(), out, o.size() * 4, cudaMemcpyDeviceToHost));
    double err = 0;
    for (int q = 0; q < 256; q++) {
      size_t oi = (size_t)q * 2654435761u % o.size();
      int b = (int)(oi / J), j = (int)(oi % J);
      double r = 0;
      for (int i = 0; i < I; i++) r += h[((size_t)b * I + i) * J + j];
      err = std::max(err, std::fabs(r - o[oi]) / (1 + std::fabs(r)));
    }
    printf("%-8s grid %6lld x %4d: %9.1f us  %6.2f TB/s  err %.1e\n", k.name, grid, k.block, t[t.size() / 2],
           n * 4 / (t[t.size() / 2] * 1e6), err);
  }
  return 0;
}
