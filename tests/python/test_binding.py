"""test_binding.py LIBKBC SRCDIR — python/kbc.py on CPU tensors (the GPU path
is exercised by bench/compare.py on the GPU machine): results against torch,
output shapes, bad arguments raising kbc.Error, a bad spec's diagnostics.
Exit 77 (skip) without torch; a python that lacks torch hands over to
$KBC_PYTHON when that names another interpreter (the GPU machine's torch is
not in /usr/bin/python3)."""
import os
import shutil
import sys

lib, src = sys.argv[1], sys.argv[2]
try:
    import torch
except ImportError:
    other = shutil.which(os.environ.get("KBC_PYTHON", ""))
    if other and os.path.realpath(other) != os.path.realpath(sys.executable) and not os.environ.get("KBC_HANDED"):
        os.environ["KBC_HANDED"] = "1"
        os.execvp(other, [other, __file__] + sys.argv[1:])
    print("SKIP: no torch for", sys.executable)
    sys.exit(77)
os.environ["KBC_LIB"] = lib
sys.path.insert(0, os.path.join(src, "python"))
import kbc  # noqa: E402

prog = kbc.Program(os.path.join(src, "specs/examples/softmax_middle.kb"), target="sm_90")
assert prog.inputs == [("x", 3)] and prog.outputs == [("out", 3)], (prog.inputs, prog.outputs)
x = torch.randn(3, 5, 4)
assert prog.output_shapes({"x": x}) == {"out": (3, 5, 4)}
out = prog.run({"x": x})["out"]
err = (out.double() - torch.softmax(x.double(), dim=1)).norm() / torch.softmax(x.double(), dim=1).norm()
assert err < 1e-6, err
preallocated = {"out": torch.full((3, 5, 4), float("nan"))}
prog.run({"x": x}, outputs=preallocated)
assert torch.equal(preallocated["out"], out)
assert b"__global__" in prog.emit("cuda")

for bad, phrase in [({"x": torch.randn(3, 5)}, "rank"), ({"y": x}, "unexpected input 'y'"),
                    ({"x": x.double()}, "float32")]:
    try:
        prog.run(bad)
    except kbc.Error as e:
        assert phrase in str(e), (phrase, str(e))
    else:
        raise AssertionError(f"no error for {phrase}")
try:
    kbc.Program(os.path.join(src, "tests/diag/axis_unknown_name.kb"))
except kbc.Error as e:
    assert e.status == "KBC_ERROR_SPEC" and "error:" in str(e), str(e)
else:
    raise AssertionError("bad spec accepted")
# config=: code generation switches for one program (kbc_options.config)
tuned = kbc.Program(os.path.join(src, "specs/examples/softmax_middle.kb"), target="sm_90", config="KBC_UNROLL=1")
assert torch.equal(tuned.run({"x": x})["out"], out)
try:
    kbc.compile(os.path.join(src, "specs/examples/softmax_middle.kb"), target="sm_90", config="KBC_UNROL=1")
except kbc.Error as e:
    assert e.status == "KBC_ERROR_ARGUMENT" and "unknown switch 'KBC_UNROL'" in str(e), str(e)
else:
    raise AssertionError("bad config accepted")
print("python binding: ok")
