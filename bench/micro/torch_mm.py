# bench/micro/torch_mm.py — torch.matmul at 4096^3 (x . w^T) at FFMA fp32 and TF32, and addmm + GELU,
# CUDA events, median of 50: the cuBLAS side of docs/GEMM_WGMMA.md, run in the same device call as kbc.
import torch, sys
def t(f, it=50):
    for _ in range(5): f()
    torch.cuda.synchronize()
    e0 = [torch.cuda.Event(enable_timing=True) for _ in range(it)]; e1 = [torch.cuda.Event(enable_timing=True) for _ in range(it)]
    for i in range(it):
        e0[i].record(); f(); e1[i].record()
    torch.cuda.synchronize()
    ts = sorted(a.elapsed_time(b) for a, b in zip(e0, e1)); return ts[len(ts)//2] * 1e3
M=N=K=4096
a = torch.randn(M, K, device='cuda'); w = torch.randn(N, K, device='cuda'); b = torch.randn(N, device='cuda')
for tf in (False, True):
    torch.backends.cuda.matmul.allow_tf32 = tf
    us = t(lambda: torch.matmul(a, w.t()))
    us2 = t(lambda: torch.nn.functional.gelu(torch.addmm(b, a, w.t())))
    print(f"torch {'tf32' if tf else 'fp32'} a @ w.T 4096^3: {us:.1f} us ({2*M*N*K/us/1e6:.1f} TFLOP/s); addmm+gelu {us2:.1f} us")
