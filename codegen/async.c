/* async.c — the asynchronous-copy helpers of the pipelined kernels (the
 * fused attention family's and the GEMM family's cp.async K loops): the
 * dynamic shared-memory declaration, shared addresses, 32-bit-address shared
 * loads, cp.async of 4 and 16 bytes with zero fill, commit and wait.
 * Before: a translation unit being printed.  After cg_emit_async_helpers():
 * the helpers, once per unit (guarded by #ifndef); on GPUs before sm_80 the
 * copies are plain loads and stores. */
#include "cg_impl.h"

static const char async_helpers[] =
    "#ifndef KBC_ASYNC_HELPERS\n"
    "#define KBC_ASYNC_HELPERS\n"
    "// Dynamic shared memory; one float, or four (16 bytes, both addresses 16-byte aligned), copied\n"
    "// global -> shared asynchronously (cp.async, sm_80+; 0 where !ok, src then unread), the copies\n"
    "// requested so far committed as a group, and a wait until at most N groups are pending.\n"
    "#define KBC_DYNAMIC_SMEM(name) extern __shared__ __align__(16) float name[]\n"
    "// The shared-memory address of p (taken once per array); dst is the element's\n"
    "// pointer and dsts its shared address (dst used only where cp.async is not).\n"
    "__device__ __forceinline__ unsigned kbc_smem_u32(const float *p) {\n"
    "  unsigned d;\n"
    "  asm(\"{ .reg .u64 p; cvta.to.shared.u64 p, %1; cvt.u32.u64 %0, p; }\" : \"=r\"(d) : \"l\"(p));\n"
    "  return d;\n"
    "}\n"
    "// Loads from shared memory by 32-bit address (NVRTC otherwise computes 64-bit generic addresses).\n"
    "__device__ __forceinline__ float kbc_lds(unsigned a) {\n"
    "  float x;\n"
    "  asm volatile(\"ld.shared.f32 %0, [%1];\" : \"=f\"(x) : \"r\"(a));\n"
    "  return x;\n"
    "}\n"
    "__device__ __forceinline__ float2 kbc_lds2(unsigned a) {\n"
    "  float2 x;\n"
    "  asm volatile(\"ld.shared.v2.f32 {%0, %1}, [%2];\" : \"=f\"(x.x), \"=f\"(x.y) : \"r\"(a));\n"
    "  return x;\n"
    "}\n"
    "__device__ __forceinline__ void kbc_cp_async4(float *dst, unsigned dsts, const float *src, bool ok) {\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "  asm volatile(\"cp.async.ca.shared.global [%0], [%1], 4, %2;\" ::\"r\"(dsts), \"l\"(src), \"r\"(ok ? 4 : 0) : \"memory\");\n"
    "#else\n"
    "  *dst = ok ? *src : 0.0f;\n"
    "#endif\n"
    "}\n"
    "__device__ __forceinline__ void kbc_cp_async16(float *dst, unsigned dsts, const float *src, bool ok) {\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "  asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" ::\"r\"(dsts), \"l\"(src), \"r\"(ok ? 16 : 0) : \"memory\");\n"
    "#else\n"
    "  for (int i = 0; i < 4; ++i) dst[i] = ok ? src[i] : 0.0f;\n"
    "#endif\n"
    "}\n"
    "__device__ __forceinline__ void kbc_cp_commit() {\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "  asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n"
    "#endif\n"
    "}\n"
    "// N a constant: 1 waits for all groups but the newest, 0 for all.\n"
    "template <int N> __device__ __forceinline__ void kbc_cp_wait() {\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "  asm volatile(\"cp.async.wait_group %0;\" ::\"n\"(N) : \"memory\");\n"
    "#endif\n"
    "}\n"
    "#endif\n\n";

void cg_emit_async_helpers(kbc_buf *out) { kbc_buf_puts(out, async_helpers); }
