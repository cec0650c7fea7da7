"""python_gpu.py LIBKBC SRCDIR — the python package on the GPU, as a
training loop and torch.compile use it (issue 16's GPU checks):
  - Program.run on CUDA tensors equals the CPU interpreter's result;
  - kbc.autograd: a two-layer perceptron (linear, bias, ReLU, linear)
    written as a forward spec and its backward spec trains for a few SGD
    steps beside the same model in PyTorch; every step's loss and every
    gradient equal PyTorch's (relative L2 <= 1e-5, fp32);
  - kbc.op inside torch.compile(fullgraph=True): no graph break, the
    compiled function's result equals eager PyTorch's;
  - kbc.op inside a torch.cuda.CUDAGraph capture (after a warm-up run):
    replays equal eager PyTorch on new inputs copied into the captured
    buffers; a capture that would have to allocate the workspace is a
    clear kbc.Error, not a CUDA error;
  - a CUDA tensor on another stream: the kernels run on the current stream;
  - inputs rotated over three sets: the runtime's graph replayed with its
    kernel nodes' arguments changed, every result right;
  - programs whose kernels need not all wait for the one before (an
    attention backward, three outputs of one input): their graph captured
    in branches, replayed and updated, every result equal to the CPU
    interpreter's.
Exit 77 (skip, printed) without torch, without CUDA or without a GPU."""
import os
import shutil
import sys
import tempfile

lib, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])


def hand_over_or_skip(why):
    """Another interpreter gets the test — $KBC_PYTHON, else the first
    python3 on PATH (the GPU machine's torch is not /usr/bin/python3's) —
    else it is skipped visibly, naming the interpreters tried."""
    tried = [f"{sys.executable}: {why}"]
    before = os.environ.get("KBC_HANDED")
    if not before:
        for cand in (os.environ.get("KBC_PYTHON", ""), "python3"):
            other = shutil.which(cand) if cand else None
            if other and os.path.realpath(other) not in map(os.path.realpath, tried):
                os.environ["KBC_HANDED"] = tried[0]
                os.execvp(other, [other, __file__] + sys.argv[1:])
    else:
        tried.insert(0, before)
    print(f"SKIP: {'; '.join(tried)} (KBC_PYTHON={os.environ.get('KBC_PYTHON', '')!r})")
    sys.exit(77)


try:
    import torch
except ImportError:
    hand_over_or_skip("no torch")
if not torch.cuda.is_available():
    hand_over_or_skip("torch sees no CUDA device")
os.environ["KBC_LIB"] = lib
sys.path.insert(0, os.path.join(src, "python"))
import kbc  # noqa: E402

torch.manual_seed(0)
dev = "cuda"


def rel(a, b):
    a, b = a.double().cpu(), b.double().cpu()
    d = torch.linalg.vector_norm(a - b)
    n = torch.linalg.vector_norm(b)
    return float(d / n) if n > 0 else float(d)


def check(what, got, want, tol=1e-5):
    e = rel(got, want)
    if not e <= tol:
        raise SystemExit(f"FAIL: {what}: relative L2 error {e:.3g} > {tol:g}")
    print(f"ok: {what} ({e:.2g})")


# ---- Program.run on CUDA against the CPU interpreter --------------------
prog = kbc.compile(os.path.join(src, "specs/examples/softmax_middle.kb"))
x = torch.randn(6, 37, 5)
check("softmax_middle cuda vs cpu", prog.run({"x": x.to(dev)})["out"], prog.run({"x": x})["out"])

# ---- kbc.autograd: a small model trained for a few steps ----------------
FWD = """kernel mlp2
axis n var
axis din var
axis dh var
axis dout var
input x f32[n, din]
input w1 f32[dh, din]
input b1 f32[dh]
input w2 f32[dout, dh]
input b2 f32[dout]
output y f32[n, dout]
tensor h f32[n, dh]
h[i, j] = relu(b1[j] + sum(k: x[i, k] * w1[j, k]))
y[i, o] = b2[o] + sum(j: h[i, j] * w2[o, j])
"""
BWD = """kernel mlp2_bwd
axis n var
axis din var
axis dh var
axis dout var
input x f32[n, din]
input w1 f32[dh, din]
input b1 f32[dh]
input w2 f32[dout, dh]
input grad_y f32[n, dout]
output grad_x f32[n, din]
output grad_w1 f32[dh, din]
output grad_b1 f32[dh]
output grad_w2 f32[dout, dh]
output grad_b2 f32[dout]
tensor pre f32[n, dh]
pre[i, j] = b1[j] + sum(k: x[i, k] * w1[j, k])
tensor gh f32[n, dh]
gh[i, j] = where(pre[i, j] > 0.0, sum(o: grad_y[i, o] * w2[o, j]), 0.0)
grad_w2[o, j] = sum(i: grad_y[i, o] * relu(pre[i, j]))
grad_b2[o] = sum(i: grad_y[i, o])
grad_w1[j, k] = sum(i: gh[i, j] * x[i, k])
grad_b1[j] = sum(i: gh[i, j])
grad_x[i, k] = sum(j: gh[i, j] * w1[j, k])
"""
mlp = kbc.autograd(FWD, BWD)
n, din, dh, dout = 64, 48, 96, 10
params = {
    "w1": torch.randn(dh, din, device=dev) / din ** 0.5,
    "b1": torch.randn(dh, device=dev) * 0.1,
    "w2": torch.randn(dout, dh, device=dev) / dh ** 0.5,
    "b2": torch.randn(dout, device=dev) * 0.1,
}
ours = {k: v.clone().requires_grad_() for k, v in params.items()}
ref = {k: v.double().clone().requires_grad_() for k, v in params.items()}
data = torch.randn(n, din, device=dev)
target = torch.randint(0, dout, (n,), device=dev)
lr = 0.1
for step in range(5):
    xin = data.clone().requires_grad_()
    y = mlp(xin, ours["w1"], ours["b1"], ours["w2"], ours["b2"])
    assert y.grad_fn is not None, "kbc.autograd output has no grad_fn"
    loss = torch.nn.functional.cross_entropy(y, target)
    loss.backward()
    xr = data.double().clone().requires_grad_()
    yr = torch.relu(xr @ ref["w1"].T + ref["b1"]) @ ref["w2"].T + ref["b2"]
    lr_loss = torch.nn.functional.cross_entropy(yr, target)
    lr_loss.backward()
    check(f"step {step}: loss", loss.detach().reshape(1), lr_loss.detach().reshape(1))
    check(f"step {step}: grad x", xin.grad, xr.grad)
    for k in params:
        check(f"step {step}: grad {k}", ours[k].grad, ref[k].grad)
    with torch.no_grad():
        for k in params:
            ours[k] -= lr * ours[k].grad
            ref[k] -= lr * ref[k].grad
            ours[k].grad = None
            ref[k].grad = None

# ---- kbc.op inside torch.compile(fullgraph=True) ------------------------
GELU = """kernel lin_gelu
axis m var
axis k var
axis n var
input x f32[m, k]
input w f32[n, k]
input b f32[n]
output y f32[m, n]
y[i, j] = gelu(b[j] + sum(e: x[i, e] * w[j, e]))
"""
lin_gelu = kbc.op(GELU)


def block(x, w, b):
    return torch.tanh(lin_gelu(x * 2.0, w, b)) + 1.0


xs, ws, bs = torch.randn(33, 64, device=dev), torch.randn(40, 64, device=dev), torch.randn(40, device=dev)
want = torch.tanh(torch.nn.functional.gelu(torch.nn.functional.linear(
    (xs * 2.0).double(), ws.double(), bs.double()))) + 1.0
if hasattr(torch, "compile"):
    import torch._dynamo
    torch._dynamo.reset()
    compiled = torch.compile(block, fullgraph=True)
    check("kbc.op in torch.compile(fullgraph=True)", compiled(xs, ws, bs), want)
    xs2 = torch.randn(17, 64, device=dev)  # another size: a new binding, shapes from the fake kernel
    want2 = torch.tanh(torch.nn.functional.gelu(torch.nn.functional.linear(
        (xs2 * 2.0).double(), ws.double(), bs.double()))) + 1.0
    check("kbc.op in torch.compile, another size", compiled(xs2, ws, bs), want2)
else:
    print("note: torch", torch.__version__, "has no torch.compile; skipped that check")

# ---- kbc.op inside a CUDA graph capture ---------------------------------
static_x, static_w, static_b = xs.clone(), ws.clone(), bs.clone()
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(2):  # warm-up: compiles, allocates the workspace
        lin_gelu(static_x, static_w, static_b)
torch.cuda.current_stream().wait_stream(s)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    static_y = lin_gelu(static_x, static_w, static_b)
for trial in range(3):
    nx = torch.randn_like(static_x)
    static_x.copy_(nx)
    graph.replay()
    torch.cuda.synchronize()
    check(f"CUDA graph replay {trial}", static_y, torch.nn.functional.gelu(torch.nn.functional.linear(
        nx.double(), static_w.double(), static_b.double())))

# A program whose workspace has never been allocated cannot be captured:
# a clear error, and the capture is abandoned cleanly.
TWO = """kernel gram_sym
axis n var
axis k var
input x f32[n, k]
output y f32[n]
tensor t f32[n, n]
t[i, j] = sum(e: x[i, e] * x[j, e])
y[i] = sum(j: t[i, j] * t[j, i])
"""
two = kbc.compile(TWO)
two.set_specialize(0)  # the generic program: the warm-up loads the module the capture would use
two.run({"x": torch.randn(16, 8, device=dev)})  # a small workspace
torch.cuda.synchronize()
assert two.num_kernels == 2, two.num_kernels  # t has a buffer in the workspace
g2 = torch.cuda.CUDAGraph()
xin = torch.randn(300, 8, device=dev)
try:
    with torch.cuda.graph(g2):
        two.run({"x": xin})
except kbc.Error as e:
    assert "captured" in str(e) and "before capturing" in str(e), str(e)
    print("ok: a capture needing a new workspace is refused:", str(e).splitlines()[0][:120])
except RuntimeError as e:  # torch may report the abandoned capture in its own words around ours
    assert "before capturing" in str(e) or "kbc" in str(e), str(e)
    print("ok: a capture needing a new workspace is refused (torch):", str(e).splitlines()[0][:120])
else:
    raise SystemExit("FAIL: a capture that had to allocate the workspace was accepted")
torch.cuda.synchronize()
t = xin.double() @ xin.double().T
check("gram_sym after the refused capture", two.run({"x": xin})["y"], (t * t.T).sum(1))

# ---- the current stream --------------------------------------------------
side = torch.cuda.Stream()
with torch.cuda.stream(side):
    xa = torch.randn(8, 300, 9, device=dev)
    out = prog.run({"x": xa})["out"]
side.synchronize()
check("run on a side stream", out, torch.softmax(xa.double(), dim=1))
# ---- rotating inputs: the runtime's graph replayed with new arguments ----
# Three input sets in turn, four rounds (KBC_GRAPH_UPDATE, the default): from the
# second call (the same sizes) the runtime captures its launches into a
# graph, and each later call
# with other tensors changes the graph's kernel nodes' arguments
# (runtime/exec.c, update_graph).  Every output against PyTorch; KBC_DEBUG=2
# on fd 2 shows the nodes were changed, never dropped.
mlp = kbc.compile(os.path.join(src, "specs/examples/mlp_relu.kb"))
sets = []
for i in range(3):
    t = {"x": torch.randn(16, 1024, device=dev), "w1": torch.randn(4096, 1024, device=dev) / 32,
         "b1": torch.randn(4096, device=dev), "w2": torch.randn(1024, 4096, device=dev) / 64,
         "b2": torch.randn(1024, device=dev)}
    h = torch.relu(t["x"].double() @ t["w1"].double().T + t["b1"].double())
    sets.append((t, h @ t["w2"].double().T + t["b2"].double()))


def with_debug_log(level, body):
    """body() under KBC_DEBUG=level, fd 2 caught: (its result, the log's text)."""
    log = tempfile.TemporaryFile(mode="w+")
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(log.fileno(), 2)
    os.environ["KBC_DEBUG"] = str(level)
    try:
        result = body()
        torch.cuda.synchronize()
    finally:
        del os.environ["KBC_DEBUG"]
        os.dup2(saved, 2)
        os.close(saved)
    log.seek(0)
    return result, log.read()


results, text = with_debug_log(2, lambda: [(rnd, i, mlp.run(t)["out"], want)
                                           for rnd in range(4) for i, (t, want) in enumerate(sets)])
for rnd, i, got, want in results:
    check(f"rotating inputs, round {rnd}, set {i}", got, want)
changed = text.count("kernel nodes given new arguments")
if changed < 8 or "arguments not changed" in text:
    raise SystemExit(f"FAIL: rotating inputs: the graph was changed {changed} times of the 10 expected; "
                     f"{[ln for ln in text.splitlines() if 'graph' in ln][:5]}")
print(f"ok: rotating inputs: the graph's nodes changed {changed} times")
# ---- argument layouts: sizes in turn, a bad call between ----
# The package keeps each layout's argument array (Program._layouts) and the
# library the last launch's binding (api.c, launch_layout): sizes that
# alternate, preallocated outputs and a wrong argument between two calls
# must each be bound afresh, every result right.
small = {k: (v[:5] if k == "x" else v) for k, v in sets[0][0].items()}
calls = [(sets[0][0], sets[0][1]), (small, sets[0][1][:5]), (sets[1][0], sets[1][1]), (small, sets[0][1][:5])]
for k, (t, want) in enumerate(calls):
    check(f"layouts, call {k}", mlp.run(t)["out"], want)
    if k == 1:
        for bad, phrase in [({**t, "b2": torch.randn(7, device=dev)}, "b2"),
                            ({**t, "x": torch.randn(5, 1000, device=dev)}, "x")]:
            try:
                mlp.run(bad)
            except kbc.Error as e:
                assert phrase in str(e), str(e)
            else:
                raise SystemExit(f"FAIL: layouts: a wrong {phrase} accepted")
    if k == 2:
        into = {"out": torch.full((16, 1024), float("nan"), device=dev)}
        mlp.run(t, outputs=into)
        check("layouts, preallocated output", into["out"], want)
# Only x changes, the weights stay (a model's forward): the graph's nodes
# whose tensors are all as it has them keep their arguments (exec.c,
# same_tensors), the rest take the new x; every result right.
w_fixed = sets[0][0]
for i in range(4):
    x = torch.randn(16, 1024, device=dev)
    t = {**w_fixed, "x": x}
    h = torch.relu(x.double() @ t["w1"].double().T + t["b1"].double())
    check(f"layouts, new x {i}", mlp.run(t)["out"], h @ t["w2"].double().T + t["b2"].double())
print("ok: argument layouts")
# ---- graphs in branches: kernels that need not wait for the one before ----
# (codegen/deps.c, runtime/exec.c capture_branches): replayed and updated
# with rotating inputs, every output against the CPU interpreter's; the
# KBC_DEBUG=1 log must say the capture was in branches.
three = """
axis n var
input x f32[n, 64]
input w f32[64, 64]
output a f32[n, 64]
output s f32[n]
output m f32[64]
a[i, j] = relu(sum(k: x[i, k] * w[k, j]))
m[j] = max(i: x[i, j])
s[i] = sum(j: x[i, j] * x[i, j]) + sum(j: a[i, j])
"""
cases = [(kbc.compile(os.path.join(src, "specs/examples/attention_bwd.kb")),
          lambda: {n: torch.randn(2, 3, 100, 64, device=dev) for n in ("q", "k", "v", "go")}),
         (kbc.Program(source=three, name="three"),
          lambda: {"x": torch.randn(300, 64, device=dev), "w": torch.randn(64, 64, device=dev) / 8})]


def run_rotating(cases):
    """Each program of cases on three input sets, three rounds."""
    out = []
    for prog, make in cases:
        sets = [make() for _ in range(3)]
        out += [(prog.name, rnd, i, prog.run(t), t, prog) for rnd in range(3) for i, t in enumerate(sets)]
    return out


os.environ["KBC_GRAPH_BRANCHES"] = "1"  # the default; set in case the caller's environment turned it off
results, text = with_debug_log(1, lambda: run_rotating(cases))
for name, rnd, i, got, t, prog in results:
    want = prog.run({n: v.cpu() for n, v in t.items()})
    for out in want:
        check(f"branches, {name} round {rnd} set {i}: {out}", got[out].cpu(), want[out])
branched = text.count("in branches")
if branched < 2:
    raise SystemExit(f"FAIL: branches: {branched} captures in branches of the 2 expected; "
                     f"{[ln for ln in text.splitlines() if 'graph' in ln][:5]}")
print(f"ok: graphs in branches ({branched} captures)")
print("python package on the GPU: ok")
