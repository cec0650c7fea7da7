// emu.h — runs kbc's generated CUDA C on the CPU, for tests without a GPU
// (tests/codegen/kernel_emu.c).  Included before the generated translation
// unit and compiled as C++: one std::thread per CUDA thread, the blocks of
// a launch one after another, __shared__ arrays as function statics (shared
// by the block's threads), __syncthreads as a barrier of the block, and
// kbc_tf32 / kbc_mma_tf32 (mma.sync m16n8k8 TF32, fragments as in the PTX
// ISA) emulated with a barrier per warp, warp shuffles and __syncwarp with a
// barrier per group of lanes, atomicAdd under one lock.  Enough for kbc's
// kernels, whose barriers are reached by every thread of their group.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <thread>
#include <atomic>
#include <map>
#include <vector>

struct dim3 {
  unsigned x = 0, y = 0, z = 0;
};
static thread_local dim3 threadIdx;
static dim3 blockIdx, blockDim, gridDim;
static pthread_barrier_t emu_block_barrier, emu_warp_barrier[32];

#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
struct float4 {
  float x, y, z, w;
};
struct float2 {
  float x, y;
};
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
static inline float2 make_float2(float x, float y) { return float2{x, y}; }
static inline void __syncthreads() { pthread_barrier_wait(&emu_block_barrier); }
// __syncthreads_and: a barrier whose value is whether every thread's p holds.
static int emu_and_scratch[1024];
static inline int __syncthreads_and(int p) {
  emu_and_scratch[threadIdx.x] = p != 0;
  __syncthreads();
  int all = 1;
  for (unsigned i = 0; i < blockDim.x; i++) all &= emu_and_scratch[i];
  __syncthreads();
  return all;
}
// Warp-level operations of a group of lanes (the mask: a warp, or an
// aligned team within it): a barrier per warp and mask, made on first use.
static pthread_mutex_t emu_group_lock = PTHREAD_MUTEX_INITIALIZER;
static std::map<unsigned, pthread_barrier_t *> emu_groups[32];
static float emu_shfl_scratch[32][32];
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
  unsigned w = threadIdx.x / 32;
  pthread_mutex_lock(&emu_group_lock);
  pthread_barrier_t *&b = emu_groups[w][mask];
  if (!b) {
    b = new pthread_barrier_t;
    pthread_barrier_init(b, NULL, (unsigned)__builtin_popcount(mask));
  }
  pthread_mutex_unlock(&emu_group_lock);
  pthread_barrier_wait(b);
}
static inline float __ldca(const float *p) { return *p; }
static inline float __ldcg(const float *p) { return *p; }
static inline void __stwb(float4 *p, float4 v) { *p = v; }
static inline float4 __ldg(const float4 *p) { return *p; }
static inline float __fdividef(float a, float b) { return a / b; } // the GPU's is within 2 ulp
static inline float4 __ldca(const float4 *p) { return *p; }
static inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask) {
  unsigned w = threadIdx.x / 32, lane = threadIdx.x % 32;
  emu_shfl_scratch[w][lane] = v;
  __syncwarp(mask);
  float r = emu_shfl_scratch[w][lane ^ (unsigned)lane_mask];
  __syncwarp(mask);
  return r;
}
static pthread_mutex_t emu_atomic_lock = PTHREAD_MUTEX_INITIALIZER;
static inline float atomicAdd(float *p, float v) {
  pthread_mutex_lock(&emu_atomic_lock);
  float old = *p;
  *p = old + v;
  pthread_mutex_unlock(&emu_atomic_lock);
  return old;
}
static inline unsigned atomicAdd(unsigned *p, unsigned v) {
  pthread_mutex_lock(&emu_atomic_lock);
  unsigned old = *p;
  *p = old + v;
  pthread_mutex_unlock(&emu_atomic_lock);
  return old;
}
// Blocks run one after another: what one block wrote is visible to the next.
static inline void __threadfence() {}
struct uint3 {
  unsigned x, y, z;
};
static inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return uint3{x, y, z}; }

// The persistent kernel's hand-offs (codegen/persist.c).  Its blocks run
// one after another here, so the first takes every task in order and a
// stage it waits for is always done: a wait that would block is a
// dependency on a later stage, reported.  A task narrower than the block
// synchronises its first n threads (a barrier per n, made on first use).
#define KBC_PERSIST_HELPERS
static inline void kbc_stage_done(unsigned *c) { atomicAdd(c, 1u); }
static inline void kbc_stage_wait(const unsigned *c, unsigned n) {
  pthread_mutex_lock(&emu_atomic_lock);
  unsigned v = *c;
  pthread_mutex_unlock(&emu_atomic_lock);
  if (v < n) {
    fprintf(stderr, "emu: a task waits for a stage not done (%u of %u blocks): a dependency on a later stage\n", v, n);
    abort();
  }
}
// Thread-block clusters (codegen/cluster.c): launched here without the attribute, so every block is a
// cluster of its own, and the cluster's barrier is the block's.
#define KBC_CLUSTER_HELPERS
static inline unsigned kbc_cluster_rank() { return 0; }
static inline unsigned kbc_cluster_size() { return 1; }
static inline unsigned kbc_cluster_id() { return blockIdx.x; }
static inline unsigned kbc_cluster_count() { return gridDim.x; }
static inline void kbc_cluster_sync() { __syncthreads(); }
// Named barriers, keyed by their id and count, made on first use: a task narrower than the block
// synchronises its first n threads (barrier 1); a slot of the cluster kernel (KBC_CLUSTER_SLOTS) its
// own, barrier first + 2 (threadIdx.x / t).  The and-reduction's flags sit at the threads' indices
// (in __syncthreads_and's array).
static std::map<unsigned, pthread_barrier_t *> emu_named;
static inline void emu_id_sync(unsigned id, unsigned n) {
  pthread_mutex_lock(&emu_group_lock);
  pthread_barrier_t *&b = emu_named[id << 16 | n];
  if (!b) {
    b = new pthread_barrier_t;
    pthread_barrier_init(b, NULL, n);
  }
  pthread_mutex_unlock(&emu_group_lock);
  pthread_barrier_wait(b);
}
static inline int emu_id_and(unsigned id, unsigned base, unsigned n, int p) {
  emu_and_scratch[threadIdx.x] = p != 0;
  emu_id_sync(id, n);
  int all = 1;
  for (unsigned i = 0; i < n; i++) all &= emu_and_scratch[base + i];
  emu_id_sync(id, n);
  return all;
}
static inline void kbc_bar_sync(unsigned n) { emu_id_sync(1, n); }
static inline int kbc_bar_and(unsigned n, int p) { return emu_id_and(1, 0, n, p); }
static inline void kbc_slot_sync(unsigned first, unsigned t, unsigned n) {
  emu_id_sync(first + 2 * (threadIdx.x / t), n);
}
static inline int kbc_slot_and(unsigned first, unsigned t, unsigned n, int p) {
  return emu_id_and(first + 2 * (threadIdx.x / t), threadIdx.x / t * t, n, p);
}
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }

#define KBC_GEMM_TF32_HELPERS
#define KBC_TF32_COPY // the launcher rounds the operands itself (kernel_emu.c, prep_lines)
// cvt.rna.tf32.f32: to 10 mantissa bits, nearest, ties away from zero.
static inline float kbc_tf32(float x) {
  unsigned u = __float_as_uint(x);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
  return __uint_as_float(u);
}
// d += a * b for one m16n8k8 tile: each lane's fragments go through the
// warp's scratch; g = lane / 4, t = lane % 4; a0 (g, t), a1 (g + 8, t),
// a2 (g, t + 4), a3 (g + 8, t + 4); b0 (k = t, n = g), b1 (k = t + 4, n = g);
// c0 (g, 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1).
// As the tensor cores do: operands read as TF32 (the low 13 mantissa bits
// ignored), the products and the accumulator summed and the sum rounded
// toward zero (what makes long chains of mma into one accumulator drift).
static inline float emu_tf32_bits(unsigned u) { return __uint_as_float(u & 0xffffe000u); }
static inline float emu_round_to_zero(double v) {
  float r = (float)v;
  if (fabs((double)r) > fabs(v)) r = nextafterf(r, 0.0f);
  return r;
}
static struct {
  unsigned a[32][4], b[32][2];
} emu_mma_scratch[32];
static inline void kbc_mma_tf32(float *d, const unsigned *a, const unsigned *b) {
  int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  auto &s = emu_mma_scratch[w];
  for (int i = 0; i < 4; i++) s.a[lane][i] = a[i];
  for (int i = 0; i < 2; i++) s.b[lane][i] = b[i];
  pthread_barrier_wait(&emu_warp_barrier[w]);
  int g = lane >> 2, t = lane & 3;
  for (int r = 0; r < 4; r++) {
    int row = g + (r >= 2 ? 8 : 0), col = 2 * t + (r & 1);
    double acc = d[r];
    for (int k = 0; k < 8; k++)
      acc += (double)emu_tf32_bits(s.a[(row % 8) * 4 + k % 4][(row >= 8) + 2 * (k >= 4)]) *
             (double)emu_tf32_bits(s.b[col * 4 + k % 4][k >= 4]);
    d[r] = emu_round_to_zero(acc);
  }
  pthread_barrier_wait(&emu_warp_barrier[w]);
}

// cp.async: each thread's copies are queued in commit groups and done at
// the wait that needs them (the latest moment the hardware may land them),
// so that a read before its wait sees stale data; dynamic shared memory
// as one array of the largest size a block may have, shared by every
// kernel (blocks run one at a time): past the bytes the launch gives the
// kernel (emu_launch's smem), NaN bytes before each block, checked
// untouched after it (emu_smem_check), so that a kernel using more than
// its plan asks for fails here as it would on the GPU.
#define KBC_ASYNC_HELPERS
// Shared addresses are byte offsets from the dynamic array.
enum { EMU_SMEM_MAX = 232448 };
static float emu_dyn_smem[EMU_SMEM_MAX / 4] __attribute__((aligned(16)));
static thread_local const char *emu_smem_base;
#define KBC_DYNAMIC_SMEM(name) KBC_DYNAMIC_SMEM_AT(name, 0)
#define KBC_DYNAMIC_SMEM_AT(name, off)        \
  float *const name = emu_dyn_smem + (off);   \
  emu_smem_base = (const char *)emu_dyn_smem
struct emu_copy {
  float *dst;
  const float *src;
  bool ok;
};
static thread_local std::vector<std::vector<emu_copy>> emu_groups_done_at_wait;
static thread_local std::vector<emu_copy> emu_pending;
static inline unsigned kbc_smem_u32(const float *p) { return (unsigned)((const char *)p - emu_smem_base); }
static inline float kbc_lds(unsigned a) { return *(const float *)(emu_smem_base + a); }
static inline float2 kbc_lds2(unsigned a) { return *(const float2 *)(emu_smem_base + a); }
// wgmma in flight count, per 1024-byte atom of shared memory, the reads of their operands (emu_wgmma
// below); a copy into an atom being read is a race whatever order the emulation picks.
static std::atomic<int> emu_wgmma_reads[232448 / 1024 + 1];
static inline void emu_check_no_wgmma_reads(const float *dst) {
  size_t atom = (size_t)((const char *)dst - emu_smem_base) / 1024;
  if (atom < sizeof emu_wgmma_reads / sizeof *emu_wgmma_reads && emu_wgmma_reads[atom].load()) {
    fprintf(stderr, "emu: thread %u copies into shared byte %zu, which a wgmma in flight reads\n", threadIdx.x,
            (size_t)((const char *)dst - emu_smem_base));
    abort();
  }
}
static inline void kbc_cp_async4(float *dst, unsigned, const float *src, bool ok) {
  emu_check_no_wgmma_reads(dst);
  emu_pending.push_back({dst, src, ok});
}
static inline void kbc_cp_async16(float *dst, unsigned, const float *src, bool ok) {
  emu_check_no_wgmma_reads(dst);
  for (int i = 0; i < 4; i++) emu_pending.push_back({dst + i, src + i, ok});
}
static inline void kbc_cp_commit() {
  emu_groups_done_at_wait.push_back(emu_pending);
  emu_pending.clear();
}
static inline void emu_cp_wait(size_t keep) {
  auto &g = emu_groups_done_at_wait;
  while (g.size() > keep) {
    for (const emu_copy &c : g.front()) *c.dst = c.ok ? *c.src : 0.0f;
    g.erase(g.begin());
  }
}
template <int N> static inline void kbc_cp_wait() { emu_cp_wait(N); }

// ldmatrix .x4 / .x2 (8 rows of 4 floats per matrix): lane l gives the
// shared address of row l % 8 of matrix l / 8 (lanes 0-15 only for .x2)
// and receives float l % 4 of row l / 4 of each matrix; the addresses
// exchanged through the warp's scratch between two warp barriers.
#define KBC_LDSM_HELPERS
static unsigned emu_ldsm_scratch[32][32];
static inline void emu_ldsm(unsigned a, unsigned *r, int n) {
  int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  emu_ldsm_scratch[w][lane] = a;
  pthread_barrier_wait(&emu_warp_barrier[w]);
  for (int j = 0; j < n; j++)
    r[j] = *(const unsigned *)(emu_smem_base + emu_ldsm_scratch[w][j * 8 + lane / 4] + 4 * (lane % 4));
  pthread_barrier_wait(&emu_warp_barrier[w]);
}
static inline void kbc_ldsm4(unsigned a, unsigned *r) { emu_ldsm(a, r, 4); }
static inline void kbc_ldsm2(unsigned a, unsigned *r) { emu_ldsm(a, r, 2); }

// wgmma m64nNk8 TF32 (sm_90a), both operands in shared memory in the 128-byte swizzle
// (kbc_wgmma_desc: start address, 8-row atoms 1024 bytes apart): each thread's products are
// queued in commit groups and done at the wait that retires them, reading shared memory then
// (the latest moment the hardware may read it, so that a stage overwritten too early shows);
// each thread computes its own accumulator fragment (warp w % 4 of the warpgroup: rows 16 (w % 4)
// + g and + 8, columns 8 j + 2 t and + 1), operands read as TF32 (low 13 bits ignored), each
// k8 sum rounded toward zero as kbc_mma_tf32 models it.
#define KBC_WGMMA_HELPERS
#define KBC_WGMMA_N64
#define KBC_WGMMA_N128
#define KBC_WGMMA_N256
#define KBC_WGMMA_RN64
#define KBC_WGMMA_RN128
#define KBC_WGMMA_RN256
// With A from registers (kbc_wgmma_rnN): the warp's 16 x 8 slice of A gathered from its lanes'
// fragments when issued (a0 .. a3: rows g and g + 8 at k t, then at k t + 4, as mma.sync
// m16n8k8's A), the op's A descriptor unused.
struct emu_wgmma_op {
  float *d;
  unsigned long long a, b;
  int n;
  bool areg;
  unsigned A[16][8];
};
static thread_local std::vector<std::vector<emu_wgmma_op>> emu_wgmma_groups;
static thread_local std::vector<emu_wgmma_op> emu_wgmma_pending;
static inline unsigned long long kbc_wgmma_desc(unsigned a) {
  return (unsigned long long)((a & 0x3ffffu) >> 4) | 0x4000004000010000ull;
}
// The float at row r, k of a swizzled K-major tile whose descriptor is desc.
static inline float emu_wgmma_at(unsigned long long desc, int r, int k) {
  if ((desc >> 62) != 1 || ((desc >> 32) & 0x3fff) != 64) abort(); // the one layout generated
  unsigned lin = (unsigned)(desc & 0x3fff) * 16 + (unsigned)(r / 8) * 1024 + (unsigned)(r % 8) * 128 + 4u * (unsigned)k;
  unsigned phys = lin ^ (((lin >> 7) & 7u) << 4);
  return emu_tf32_bits(*(const unsigned *)(emu_smem_base + phys));
}
// The atoms an operation reads: A's 8 (64 rows), B's n / 8, counted in flight from issue to retirement.
static inline void emu_wgmma_count(const emu_wgmma_op &o, int by) {
  unsigned a = (unsigned)(o.a & 0x3fff) * 16 / 1024, b = (unsigned)(o.b & 0x3fff) * 16 / 1024;
  if (!o.areg)
    for (unsigned i = 0; i < 8; i++) emu_wgmma_reads[a + i] += by;
  for (unsigned i = 0; i < (unsigned)o.n / 8; i++) emu_wgmma_reads[b + i] += by;
}
static inline void emu_wgmma_do(const emu_wgmma_op &o) {
  int lane = threadIdx.x % 32, w4 = threadIdx.x / 32 % 4, g = lane / 4, t = lane % 4;
  for (int j = 0; j < o.n / 8; j++)
    for (int q = 0; q < 4; q++) {
      int row = 16 * w4 + g + (q >= 2 ? 8 : 0), col = 8 * j + 2 * t + (q & 1);
      double acc = o.d[4 * j + q];
      for (int k = 0; k < 8; k++)
        acc += (double)(o.areg ? emu_tf32_bits(o.A[row % 16][k]) : emu_wgmma_at(o.a, row, k)) *
               (double)emu_wgmma_at(o.b, col, k);
      o.d[4 * j + q] = emu_round_to_zero(acc);
    }
}
static inline void emu_wgmma_issue(const emu_wgmma_op &o) {
  emu_wgmma_count(o, 1);
  emu_wgmma_pending.push_back(o);
}
static inline void kbc_wgmma_n64(float *d, unsigned long long a, unsigned long long b) { emu_wgmma_issue({d, a, b, 64}); }
static inline void kbc_wgmma_n128(float *d, unsigned long long a, unsigned long long b) { emu_wgmma_issue({d, a, b, 128}); }
static inline void kbc_wgmma_n256(float *d, unsigned long long a, unsigned long long b) { emu_wgmma_issue({d, a, b, 256}); }
static unsigned emu_afrag_scratch[32][32][4];
static inline void emu_wgmma_issue_reg(float *d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned long long b,
                                       int n) {
  unsigned w = threadIdx.x / 32, lane = threadIdx.x % 32;
  unsigned *mine = emu_afrag_scratch[w][lane];
  mine[0] = a0, mine[1] = a1, mine[2] = a2, mine[3] = a3;
  pthread_barrier_wait(&emu_warp_barrier[w]);
  emu_wgmma_op o{d, 0, b, n, true, {}};
  for (int r = 0; r < 16; r++)
    for (int k = 0; k < 8; k++) o.A[r][k] = emu_afrag_scratch[w][(r % 8) * 4 + k % 4][(r >= 8) + 2 * (k >= 4)];
  pthread_barrier_wait(&emu_warp_barrier[w]);
  emu_wgmma_issue(o);
}
static inline void kbc_wgmma_rn64(float *d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned long long b) {
  emu_wgmma_issue_reg(d, a0, a1, a2, a3, b, 64);
}
static inline void kbc_wgmma_rn128(float *d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned long long b) {
  emu_wgmma_issue_reg(d, a0, a1, a2, a3, b, 128);
}
static inline void kbc_wgmma_rn256(float *d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned long long b) {
  emu_wgmma_issue_reg(d, a0, a1, a2, a3, b, 256);
}
static inline void kbc_wgmma_fence() {}
static inline void kbc_fence_proxy_async() {}
static inline void kbc_wgmma_pin(float &) {}
// A stage's float rounded to TF32 in place (cvt.rna): a write, so none may be read by a wgmma
// in flight.
static inline void emu_tf32_round_at(unsigned a) {
  emu_check_no_wgmma_reads((const float *)(emu_smem_base + a));
  float *p = (float *)(emu_smem_base + a);
  *p = kbc_tf32(*p);
}
static inline void kbc_tf32_round16(unsigned a) {
  for (unsigned i = 0; i < 4; i++) emu_tf32_round_at(a + 4 * i);
}
static inline void kbc_tf32_round4(unsigned a, unsigned b, unsigned c, unsigned d) {
  emu_tf32_round_at(a), emu_tf32_round_at(b), emu_tf32_round_at(c), emu_tf32_round_at(d);
}
static inline void kbc_tf32_round1(unsigned a) { emu_tf32_round_at(a); }
static inline void kbc_wgmma_commit() {
  emu_wgmma_groups.push_back(emu_wgmma_pending);
  emu_wgmma_pending.clear();
}
template <int N> static inline void kbc_wgmma_wait() {
  auto &g = emu_wgmma_groups;
  while (g.size() > (size_t)N) {
    for (const emu_wgmma_op &o : g.front()) {
      emu_wgmma_do(o);
      emu_wgmma_count(o, -1);
    }
    g.erase(g.begin());
  }
}

// The dynamic shared memory past a launch's smem bytes: poisoned, then
// checked untouched.
static void emu_smem_poison(unsigned smem) {
  if (smem < EMU_SMEM_MAX) memset((char *)emu_dyn_smem + smem, 0xff, EMU_SMEM_MAX - smem);
}
static void emu_smem_check(unsigned smem, unsigned b) {
  const unsigned char *p = (const unsigned char *)emu_dyn_smem;
  for (unsigned i = smem; i < EMU_SMEM_MAX; i++)
    if (p[i] != 0xff) {
      fprintf(stderr, "emu: block %u wrote dynamic shared byte %u, past the %u bytes its launch gives\n", b, i, smem);
      abort();
    }
}

template <class F> static void emu_launch(unsigned grid, unsigned block, unsigned smem, F kernel) {
  gridDim.x = grid;
  blockDim.x = block;
  pthread_barrier_init(&emu_block_barrier, NULL, block);
  for (unsigned w = 0; w < block / 32; w++) pthread_barrier_init(&emu_warp_barrier[w], NULL, 32);
  for (unsigned b = 0; b < grid; b++) {
    blockIdx.x = b;
    emu_smem_poison(smem);
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < block; t++) threads.emplace_back([=] { threadIdx.x = t; kernel(); });
    for (auto &th : threads) th.join();
    emu_smem_check(smem, b);
  }
  pthread_barrier_destroy(&emu_block_barrier);
  for (unsigned w = 0; w < block / 32; w++) pthread_barrier_destroy(&emu_warp_barrier[w]);
}
