"""test_package.py LIBKBC SRCDIR — the python package as a user installs it:
`pip install --no-build-isolation ./python` into a fresh virtual
environment (with the system's site packages, for torch; KBC_LIB names
the library to bundle), then, from outside the repository:
  - kbc.__version__ equals the bundled library's version and the library
    loaded is the bundled one;
  - kbc.compile from a path and from spec text; a missing spec file is
    FileNotFoundError, a bad spec kbc.Error with its diagnostics;
  - Program.run on CPU tensors: results, run({}) and a requires_grad input
    as clear errors;
  - kbc.autograd pairing a forward spec with its backward spec, against
    torch.autograd's gradients; bad backward names refused;
  - kbc.op: torch.ops.kbc.<name> in eager mode.
Exit 77 (skip) without torch or without venv/pip."""
import os
import shutil
import subprocess
import sys
import tempfile

lib, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
if len(sys.argv) < 4:  # the outer run: make the environment, then run the checks inside it
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: no torch for", sys.executable)
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="kbc_pip_")
    try:
        venv = os.path.join(tmp, "venv")
        if subprocess.call([sys.executable, "-m", "venv", "--system-site-packages", venv]) != 0:
            print("SKIP: python -m venv failed")
            sys.exit(77)
        py = os.path.join(venv, "bin", "python")
        env = dict(os.environ, KBC_LIB=lib, PIP_DISABLE_PIP_VERSION_CHECK="1")
        # pip copies the package folder to a temporary place; the build finds the library through KBC_LIB
        r = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--quiet",
                            os.path.join(src, "python")], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout, r.stderr)
            print("FAIL: pip install ./python")
            sys.exit(1)
        env.pop("KBC_LIB")  # the installed package must find its bundled library by itself
        sys.exit(subprocess.call([py, os.path.abspath(__file__), lib, src, "inside"], env=env, cwd=tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

import torch  # noqa: E402
import kbc  # noqa: E402

assert "site-packages" in kbc.__file__, kbc.__file__
assert os.path.dirname(kbc.library_path()) == os.path.dirname(kbc.__file__), kbc.library_path()
assert kbc.__version__ == kbc.version(), (kbc.__version__, kbc.version())

# compile: a path, text; errors
prog = kbc.compile(os.path.join(src, "specs/examples/softmax_middle.kb"), target="sm_90")
x = torch.randn(3, 5, 4)
out = prog.run({"x": x})["out"]
assert torch.allclose(out, torch.softmax(x, dim=1), atol=1e-6)
text = "kernel scale2\naxis n var\ninput x f32[n]\noutput y f32[n]\ny[i] = 2.0 * x[i]\n"
p2 = kbc.compile(text)
assert p2.name == "scale2"
assert torch.equal(p2.run({"x": torch.arange(4.0)})["y"], torch.arange(4.0) * 2)
p2.set_specialize(0)
p2.set_specialize(16)
try:
    kbc.compile("no/such/spec.kb")
except FileNotFoundError as e:
    assert "no/such/spec.kb" in str(e)
else:
    raise AssertionError("missing spec accepted")
try:
    kbc.compile("kernel bad\naxis n var\ninput x f32[n]\noutput y f32[n]\ny[i] = bais[i]\n")
except kbc.Error as e:
    assert e.status == "KBC_ERROR_SPEC" and "unknown tensor 'bais'" in str(e), str(e)
else:
    raise AssertionError("bad spec accepted")
for bad, phrase in [({}, "no inputs given"), ({"x": torch.randn(4, requires_grad=True)}, "requires grad")]:
    try:
        p2.run(bad)
    except kbc.Error as e:
        assert phrase in str(e), (phrase, str(e))
    else:
        raise AssertionError(f"no error for {phrase}")
with torch.no_grad():
    p2.run({"x": torch.randn(4, requires_grad=True)})

# autograd: y = x * x * w (w broadcast over rows), its backward by hand
fwd = """kernel sqw
axis n var
axis m var
input x f32[n, m]
input w f32[m]
output y f32[n, m]
y[i, j] = x[i, j] * x[i, j] * w[j]
"""
bwd = """kernel sqw_bwd
axis n var
axis m var
input x f32[n, m]
input w f32[m]
input grad_y f32[n, m]
output grad_x f32[n, m]
output grad_w f32[m]
grad_x[i, j] = 2.0 * x[i, j] * w[j] * grad_y[i, j]
grad_w[j] = sum(i: x[i, j] * x[i, j] * grad_y[i, j])
"""
f = kbc.autograd(fwd, bwd)
xa = torch.randn(5, 7, requires_grad=True)
wa = torch.randn(7, requires_grad=True)
y = f(xa, wa)
assert y.grad_fn is not None
(y * torch.linspace(0, 1, 7)).sum().backward()
xb, wb = xa.detach().clone().requires_grad_(), wa.detach().clone().requires_grad_()
(xb * xb * wb * torch.linspace(0, 1, 7)).sum().backward()
assert torch.allclose(xa.grad, xb.grad, atol=1e-5) and torch.allclose(wa.grad, wb.grad, atol=1e-5)
assert torch.allclose(f(x=xa, w=wa), xb * xb * wb)
try:
    kbc.autograd(fwd, bwd.replace("grad_w[j]", "gw[j]").replace("output grad_w", "output gw"))
except ValueError as e:
    assert "gw" in str(e), str(e)
else:
    raise AssertionError("bad backward names accepted")

# op: torch.ops.kbc.<name>
sq = kbc.op(fwd)
assert torch.allclose(sq(xb.detach(), wb.detach()), xb * xb * wb)
assert kbc.op(fwd) is sq
print("python package: ok")
