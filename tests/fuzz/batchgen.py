"""batchgen.py — random programs of independent batch points, for the
cluster kernel (codegen/batch.c, codegen/cluster.c) in the differential
fuzzer: specgen.generate(seed, size, ("batched",)) calls generate() here.

A program is a chain over tensors [batch, R, C] (R and C drawn from the
axes), every statement led by the batch index b: linears against weights
every point shares (with a bias and an activation), row softmaxes and
layer norms, residual sums, products mixing a point's rows (attention-like
scores and their use), a scalar per point and its use, a scatter +=, and
transposes.  One spec in eight also reads another point's slice (a load at
a constant batch index, or a sum over the batch), so that the split must be
refused there and the program still run right.  Values stay bounded
(every linear goes through tanh or a division by 1 + |x|) and well
conditioned: the weights centred (the fuzzer's inputs are drawn from
[-0.5, 1.5)), and norms and differences between points only of tensors
whose rows vary (the input and the linears' outputs).

The same seed always gives the same spec.  Stdlib only."""
import random

SIZES = [1, 2, 3, 5, 7, 11, 13, 17, 31, 33]


class Gen:
    def __init__(self, seed, size):
        self.r = random.Random(seed)
        self.size = size
        self.lines, self.stmts = [], []
        self.count = 0
        # axes: the batch, the rows, and two feature widths (a var and a const)
        r = self.r
        big = size != "emu"
        self.binding = {"batch": r.choice([1, 2, 3, 5, 10] + ([16, 64] if big else [])),
                        "n": r.choice(SIZES[:8] + ([49, 65, 197] if big else [])),
                        "e": r.choice(SIZES[2:] + ([128, 256] if big else []))}
        self.dims = {"n": self.binding["n"], "e": self.binding["e"], "d": r.choice([4, 8, 16, 24, 32])}
        self.lines += ["axis batch var", "axis n var", "axis e var", f"axis d const {self.dims['d']}"]
        self.live = []  # (name, R, C): batched tensors [batch, R, C] a statement may read
        self.varied = set()  # those whose rows vary from column to column and point to point: a norm of
        # one, or its difference with another point, cancels nothing (a softmax's row may be near uniform)

    def fresh(self, base):
        self.count += 1
        return f"{base}{self.count}"

    def inp(self, name, dims):
        self.lines.append(f"input  {name} f32[{', '.join(dims)}]")

    def out(self, name, dims):
        self.lines.append(f"tensor {name} f32[{', '.join(dims)}]")

    def pick(self, varied=False):
        live = [x for x in self.live if not varied or x[0] in self.varied]
        return live[-1] if self.r.random() < 0.7 else self.r.choice(live[-3:])

    def bounded(self, x):
        return f"tanh({x})" if self.r.random() < 0.5 else f"({x}) / (1 + abs({x}))"

    # ---- statements: each appends a batched tensor to self.live ---------
    def linear(self):
        t, R, C = self.pick()
        O = self.r.choice(["d", "e", "n"])
        w, bias, y = self.fresh("w"), self.fresh("bias"), self.fresh("lin")
        self.inp(w, [O, C])
        self.inp(bias, [O])
        self.out(y, ["batch", R, O])
        self.stmts.append(f"{y}[b, i, o] = {self.bounded(f'sum(k: {t}[b, i, k] * ({w}[o, k] - 0.5)) + {bias}[o] - 0.5')}")
        self.live.append((y, R, O))
        self.varied.add(y)

    def softmax(self):
        t, R, C = self.pick()
        m, y = self.fresh("mx"), self.fresh("sm")
        self.out(m, ["batch", R])
        self.out(y, ["batch", R, C])
        self.stmts.append(f"{m}[b, i] = max(j: {t}[b, i, j])")
        self.stmts.append(f"{y}[b, i, j] = exp({t}[b, i, j] - {m}[b, i]) / sum(j2: exp({t}[b, i, j2] - {m}[b, i]))")
        self.live.append((y, R, C))

    def norm(self):
        t, R, C = self.pick(varied=True)
        mu, var, g, y = self.fresh("mu"), self.fresh("var"), self.fresh("g"), self.fresh("ln")
        self.out(mu, ["batch", R])
        self.out(var, ["batch", R])
        self.inp(g, [C])
        self.out(y, ["batch", R, C])
        self.stmts.append(f"{mu}[b, i] = sum(j: {t}[b, i, j]) / {C}")
        self.stmts.append(f"{var}[b, i] = sum(j: ({t}[b, i, j] - {mu}[b, i]) * ({t}[b, i, j] - {mu}[b, i])) / {C}")
        self.stmts.append(f"{y}[b, i, j] = ({t}[b, i, j] - {mu}[b, i]) * rsqrt({var}[b, i] + 1e-5) * {g}[j]")
        self.live.append((y, R, C))

    def residual(self):
        t, R, C = self.pick()
        same = [x for x in self.live if x[1] == R and x[2] == C and x[0] != t]
        if not same:
            return self.linear()
        u = self.r.choice(same)[0]
        y = self.fresh("res")
        self.out(y, ["batch", R, C])
        self.stmts.append(f"{y}[b, i, j] = {t}[b, i, j] + 0.5 * {u}[b, i, j]")
        self.live.append((y, R, C))

    def mix(self):
        """Scores between a point's rows, normalised, then used: rows mixed."""
        t, R, C = self.pick()
        s, p, y = self.fresh("s"), self.fresh("p"), self.fresh("mix")
        self.out(s, ["batch", R, R])
        self.out(p, ["batch", R, R])
        self.out(y, ["batch", R, C])
        self.stmts.append(f"{s}[b, i, i2] = {self.bounded(f'sum(k: {t}[b, i, k] * {t}[b, i2, k])')}")
        self.stmts.append(f"{p}[b, i, i2] = exp({s}[b, i, i2]) / sum(i3: exp({s}[b, i, i3]))")
        self.stmts.append(f"{y}[b, i, k] = sum(i2: {p}[b, i, i2] * {t}[b, i2, k])")
        self.live.append((y, R, C))

    def scalar(self):
        t, R, C = self.pick()
        s, y = self.fresh("tot"), self.fresh("sc")
        self.out(s, ["batch"])
        self.out(y, ["batch", R, C])
        self.stmts.append(f"{s}[b] = sum(i, k: {t}[b, i, k] * {t}[b, i, k])")
        self.stmts.append(f"{y}[b, i, k] = {t}[b, i, k] / (1 + {s}[b])")
        self.live.append((y, R, C))

    def scatter(self):
        t, R, C = self.pick()
        c = self.r.choice([2, 3, 7])
        y = self.fresh("hist")
        self.lines.append(f"axis {y}_c const {c}")
        self.out(y, ["batch", R, f"{y}_c"])
        self.stmts.append(f"{y}[b, i, k % {c}] += {t}[b, i, k]")
        self.live.append((y, R, f"{y}_c"))

    def transpose(self):
        t, R, C = self.pick()
        y = self.fresh("tr")
        self.out(y, ["batch", C, R])
        self.stmts.append(f"{y}[b, j, i] = {t}[b, i, j]")
        self.live.append((y, C, R))

    def mixed(self):
        """Reads another point: the split must be refused."""
        t, R, C = self.pick(varied=True)
        y = self.fresh("other")
        self.out(y, ["batch", R, C])
        if self.r.random() < 0.5:
            self.stmts.append(f"{y}[b, i, j] = {t}[b, i, j] - {t}[0, i, j]")
        else:
            self.stmts.append(f"{y}[b, i, j] = {t}[b, i, j] - sum(b2: {t}[b2, i, j]) / batch")
        self.live.append((y, R, C))

    def generate(self):
        r = self.r
        x = "x"
        self.inp(x, ["batch", "n", "d"])
        self.live.append((x, "n", "d"))
        self.varied.add(x)
        kinds = [self.linear, self.linear, self.softmax, self.norm, self.residual, self.mix, self.scalar,
                 self.scatter, self.transpose]
        for _ in range(r.randint(3, 9)):
            r.choice(kinds)()
        if r.random() < 0.125:
            self.mixed()
        y, R, C = self.live[-1]
        # the last tensor is the output (declared as such), the others temporaries or outputs
        text = "\n".join(self.lines).replace(f"tensor {y} ", f"output {y} ")
        for name, _, _ in self.live[1:-1]:
            if r.random() < 0.5:
                text = text.replace(f"tensor {name} ", f"output {name} ")
        return "kernel batched\n" + text + "\n" + "\n".join(self.stmts) + "\n", dict(self.binding)


def generate(seed, size="emu"):
    return Gen(seed, size).generate()
