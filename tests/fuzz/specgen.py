"""specgen.py — random valid kbc specs, for differential testing (csmith-style).

    python3 specgen.py SEED [--size emu|gpu] [--features LIST]  # prints a spec

generate(seed, size) returns (spec_text, bindings): a spec over the whole
language (var, const and derived axes, asserts; tensors of rank 0 to 6 and
scalar inputs; quasi-affine accesses with / and % by constants, flattening,
convolution offsets, relative positions, zero-padded ?[] accesses; scatter
+=; nested sum/max/min/prod; where; elementwise functions; the library's
softmax, layernorm, linear and relu; def and for; attention chains:
scores, softmax, a contraction with the values) and a binding of its var
axes with awkward sizes (1, primes, sizes that fit no tile).

Every spec is valid by construction: each index is created with the
dimension it ranges over, and every access is one of a few forms whose
bounds the language's prover handles (a direct use at an equal dimension, a
constant 0, `i % c` into a dimension c, `f / c` and `f % c` unflattening a
dimension P*c, `p*Q + q` flattening into P*Q, `i + d` convolution windows,
`y - ky + A - 1` relative positions, any affine mix under a zero-padded
access).  Values stay well conditioned, so that a float32 kernel agrees
with the float64 interpreter to 1e-5 unless it is wrong: exponentials only
of bounded arguments, divisions by 1 + |x|, comparisons of float values
only on input elements (never on a computed value near a threshold), no
subtraction of a subexpression from itself.

The same seed always gives the same spec.  Stdlib only."""
import random
import re
import sys

VAR_SIZES = [1, 2, 3, 5, 7, 11, 13, 17, 31, 33, 37, 65, 67, 129, 131, 257]
MAX_TERMS = 1 << 13  # terms of a reduction, nested ones multiplied (see reduction())
FEATURES = ("batched",)  # --features: batched, programs of independent batch points (batchgen.py)


class Dim:
    """A dimension: its spec text, its value for a binding, and its form.

    form: ('axis', name), ('const', value), ('prod', P, Q) with Q a Dim of
    a const axis or not, ('win', A, k) for A - k + 1 (k a const Dim),
    ('rel', A) for 2*A - 1."""

    def __init__(self, text, value, form):
        self.text, self.value, self.form = text, value, form

    def __repr__(self):
        return self.text


class Index:
    def __init__(self, name, dim):
        self.name, self.dim = name, dim


class Tensor:
    def __init__(self, name, dims, role):
        self.name, self.dims, self.role = name, dims, role


class Gen:
    def __init__(self, seed, size, features):
        self.r = random.Random(seed)
        # draws added later come from a stream of their own, so that the main stream's draws stay
        # as they were (a seed's spec changes only where such a draw changes it)
        self.r_late = random.Random(seed ^ 0x5EED5)
        self.r_tail = random.Random(seed ^ 0x7A11)  # (its own: the specs before it kept their draws)
        self.r_tail_vec = random.Random(seed ^ 0x7A12)  # (likewise)
        self.r_rows = random.Random(seed ^ 0x7A13)  # (likewise)
        self.r_guard = random.Random(seed ^ 0x7A14)  # guarded loads (likewise: the rest draw as before)
        self.r_xform = random.Random(seed ^ 0x7A15)  # contraction operands computed from a load (likewise)
        self.size = size
        self.features = set(features)
        self.lines = []  # declarations
        self.stmts = []  # statements (after the declarations)
        self.axes = {}  # name -> Dim
        self.vars = []  # var axis names
        self.consts = []  # const Dims
        self.tensors = []  # Tensor, inputs and intermediates and outputs
        self.counter = 0
        self.binding = {}
        self.limit = 20000 if size == "emu" else 1_000_000  # elements per tensor
        self.work_limit = 400_000 if size == "emu" else 30_000_000  # points of a contraction

    # ---- names -----------------------------------------------------------
    def fresh(self, base):
        self.counter += 1
        return f"{base}{self.counter}"

    # ---- axes ------------------------------------------------------------
    def make_axes(self):
        r = self.r
        nvar = r.randint(1, 4)
        for i in range(nvar):
            name = ["a", "b", "n", "m", "h", "w"][i] + ("" if r.random() < 0.7 else "_x")
            d = Dim(name, None, ("axis", name))
            d.value = (lambda nm: (lambda B: B[nm]))(name)
            self.axes[name] = d
            self.vars.append(name)
            self.lines.append(f"axis {name} var")
        for i in range(r.randint(1, 3)):
            v = r.choice([1, 2, 3, 4, 5, 7, 8, 16, 24, 32])
            name = f"k{i}" if r.random() < 0.5 else ["ks", "cpg", "heads", "r", "patch"][i]
            d = Dim(name, (lambda v: (lambda B: v))(v), ("const", v))
            d.cval = v
            self.axes[name] = d
            self.consts.append(d)
            self.lines.append(f"axis {name} const {v}")
        # derived axes: products, windows, relative positions, sums
        for _ in range(r.randint(0, 3)):
            kind = r.choice(["prod", "prod", "win", "rel", "sum", "inline"])
            A = self.axes[r.choice(self.vars)]
            if kind in ("prod", "inline"):
                Q = r.choice(self.consts + [self.axes[v] for v in self.vars])
                text = f"{A.text} * {Q.text}" if r.random() < 0.5 else f"{Q.text}*{A.text}"
                form = ("prod", A, Q)
                val = (lambda A, Q: (lambda B: A.value(B) * Q.value(B)))(A, Q)
            elif kind == "win":
                k = r.choice(self.consts)
                text = f"{A.text} - {k.text} + 1"
                form = ("win", A, k)
                val = (lambda A, k: (lambda B: A.value(B) - k.cval + 1))(A, k)
            elif kind == "rel":
                text = f"2*{A.text} - 1"
                form = ("rel", A)
                val = (lambda A: (lambda B: 2 * A.value(B) - 1))(A)
            else:
                c = r.randint(1, 3)
                text = f"{A.text} + {c}"
                form = ("axis", None)
                val = (lambda A, c: (lambda B: A.value(B) + c))(A, c)
            if kind == "inline":
                # not named: the expression stands in shapes as it is
                d = Dim(f"{text}" if " " not in text else text.replace(" ", ""), val, form)
                self.inline_dims = getattr(self, "inline_dims", []) + [d]
                continue
            name = self.fresh("d")
            d = Dim(name, val, form)
            self.axes[name] = d
            self.lines.append(f"axis {name} = {text}")
        if r.random() < 0.15 and any(c.cval in (2, 4) for c in self.consts):
            c = next(c for c in self.consts if c.cval in (2, 4))
            v = r.choice(self.vars)
            self.lines.append(f"assert {v} % {c.cval} == 0")
            self.asserts = getattr(self, "asserts", []) + [(v, c.cval)]

    def all_dims(self):
        return list(self.axes.values()) + getattr(self, "inline_dims", [])

    def bind(self):
        r = self.r
        for _ in range(200):
            B = {v: r.choice(VAR_SIZES[: 10 if self.size == "emu" else len(VAR_SIZES)]) for v in self.vars}
            if r.random() < 0.3:
                B[r.choice(self.vars)] = 1
            for v, c in getattr(self, "asserts", []):
                B[v] = max(c, B[v] - B[v] % c)
            if all(d.value(B) >= 1 for d in self.all_dims()):
                self.binding = B
                return True
        return False

    def numel(self, dims):
        n = 1
        for d in dims:
            n *= d.value(self.binding)
        return n

    # ---- tensors ---------------------------------------------------------
    def shape_text(self, dims):
        return "" if not dims else "[" + ", ".join(d.text for d in dims) + "]"

    def new_const(self, v):
        """A new constant axis of value v (declared where the spec's
        declarations are: axes may come in any order)."""
        name = self.fresh("c")
        d = Dim(name, (lambda v: (lambda B: v))(v), ("const", v))
        d.cval = v  # (not among self.axes: later draws over the axes stay as they were)
        self.lines.append(f"axis {name} const {v}")
        return d

    def new_input(self, dims):
        name = self.fresh("x")
        t = Tensor(name, dims, "input")
        self.tensors.append(t)
        self.lines.append(f"input {name} f32{self.shape_text(dims)}")
        return t

    def random_dims(self, rank):
        dims = []
        for _ in range(rank):
            for _ in range(20):
                d = self.r.choice(self.all_dims())
                if self.numel(dims + [d]) <= self.limit:
                    break
            else:
                d = self.r.choice(self.consts)
            dims.append(d)
        return dims

    # ---- indices into a dimension ------------------------------------------
    def index_into(self, dim, scope, padded=False):
        """An index expression for a position of dimension dim, from the
        indices in scope (list of Index), or None."""
        r = self.r
        opts = []
        direct = [ix for ix in scope if ix.dim.text == dim.text]
        if direct:
            opts += [lambda: r.choice(direct).name] * 4
        opts.append(lambda: "0")
        if dim.form[0] == "const" and dim.cval > 1:
            others = [ix for ix in scope if ix.dim.text != dim.text]
            if others:
                opts.append(lambda: f"{r.choice(others).name} % {dim.text}")
        # unflatten: an index over P*c read at P as f / c
        for ix in scope:
            f = ix.dim.form
            if f[0] == "prod" and f[2].form[0] == "const":
                if f[1].text == dim.text:
                    opts.append((lambda ix, c: lambda: f"{ix.name} / {c.text}")(ix, f[2]))
                if f[2].text == dim.text:
                    opts.append((lambda ix, c: lambda: f"{ix.name} % {c.text}")(ix, f[2]))
        # flatten: p*Q + q into P*Q
        if dim.form[0] == "prod":
            P, Q = dim.form[1], dim.form[2]
            ps = [ix for ix in scope if ix.dim.text == P.text]
            qs = [ix for ix in scope if ix.dim.text == Q.text]
            if ps and qs:
                opts += [lambda: f"{r.choice(ps).name}*{Q.text} + {r.choice(qs).name}"] * 2
        # windows: i over A - k + 1 and d over k, read at A as i + d
        wins = [ix for ix in scope if ix.dim.form[0] == "win" and ix.dim.form[1].text == dim.text]
        for ix in wins:
            k = ix.dim.form[2]
            ds = [j for j in scope if j.dim.text == k.text and j is not ix]
            if ds:
                opts += [(lambda ix, ds: lambda: f"{ix.name} + {r.choice(ds).name}")(ix, ds)] * 2
            if k.cval > 1:  # `i + 0` is i itself, a direct use that would range i over A (kbc check rejects)
                opts.append((lambda ix, k: lambda: f"{ix.name} + {r.randint(1, k.cval - 1)}")(ix, k))
        # relative positions: y, ky over A read at 2A - 1
        if dim.form[0] == "rel":
            A = dim.form[1]
            ys = [ix for ix in scope if ix.dim.text == A.text]
            if ys:
                opts += [lambda: f"{r.choice(ys).name} - {r.choice(ys).name} + {A.text} - 1"] * 2
        if padded and scope:
            def affine():
                ix = r.choice(scope)
                e = ix.name
                if r.random() < 0.5:
                    e += f" {r.choice(['+', '-'])} {r.randint(1, 3)}"
                if r.random() < 0.3:
                    e = f"2*{e}" if r.random() < 0.5 else f"{e} - {r.choice(scope).name}"
                if r.random() < 0.2:
                    e = f"({e}) / 2"
                return e
            opts += [affine] * 3
        return r.choice(opts)()

    def load(self, scope, depth, want_padded=None):
        """A tensor access: an existing tensor read at indices from scope,
        or a new input shaped after the chosen indices."""
        r = self.r
        # zero-padded only with indices in scope (x?[0] alone is no index notation)
        padded = bool(scope) and (want_padded if want_padded is not None else r.random() < 0.12)
        readable = [t for t in self.tensors if t.role != "output"]
        if readable and r.random() < 0.6:
            t = r.choice(readable)
            if not t.dims:  # a scalar input or a rank-0 intermediate
                return t.name
            idx = [self.index_into(d, scope, padded) for d in t.dims]
            return f"{t.name}{'?' if padded else ''}[{', '.join(idx)}]"
        if not scope or r.random() < 0.08:
            scal = [t for t in self.tensors if t.role == "input" and not t.dims]
            t = scal[0] if scal and r.random() < 0.7 else self.new_input([])
            return t.name
        # a new input over a few of the indices in scope, in some order
        k = r.randint(1, min(len(scope), 4))
        chosen = r.sample(scope, k)
        dims, idx = [], []
        for ix in chosen:
            d = ix.dim
            if r.random() < 0.15:  # a compound form
                alt = self.index_into(d, scope, False)
                dims.append(d)
                idx.append(alt)
            else:
                dims.append(d)
                idx.append(ix.name)
        if self.numel(dims) > self.limit:
            return f"{self.new_input([]).name}"
        t = self.new_input(dims)
        return f"{t.name}[{', '.join(idx)}]"

    # ---- values ------------------------------------------------------------
    def value(self, scope, depth, bounded=False):
        """A float expression.  bounded: the caller needs |value| <~ 10
        (an exponential's argument)."""
        r = self.r
        if depth <= 0:
            c = r.random()
            if c < 0.75:
                return self.load(scope, depth)
            if c < 0.9 or not scope:
                # -0.25, not -1.0: with inputs of mean 0.5 (INPUTS), `-1.0 + x + y`
                # summed cancels to ~sqrt(n) of n terms, a value fp32 cannot
                # give to 1e-5 in any order (GPU seed 117303)
                return r.choice(["0.5", "2.0", "1.0", "0.25", "1.5e-1", "3", "-0.25"])
            ix = r.choice(scope)
            # inside a reduction, index terms of both signs cancel each
            # other (sum over r of (r - i) / 8 is near 0 for i near the
            # middle): there, a sum of indices
            sign = "+" if getattr(self, "terms", 1) > 1 else "-"
            return f"({ix.name} {sign} {r.choice(scope).name}) * 0.125"
        c = r.random()
        if c < 0.22:
            op = r.choice(["+", "-", "*", "*"])
            a = self.value(scope, depth - 1)
            b = self.value(scope, depth - 1)
            if op == "-" and a == b:
                op = "+"
            e = f"({a} {op} {b})"
            return f"tanh{e}" if bounded else e
        if c < 0.34:
            f = r.choice(["tanh", "sigmoid", "relu", "abs", "erf", "gelu", "sqrt_abs", "log1p_abs", "rsqrt_sq",
                          "exp_tanh", "exp_neg_abs", "neg", "silu", "softplus", "log1p_fn", "expm1_tanh"])
            a = self.value(scope, depth - 1)
            e = {
                "sqrt_abs": f"sqrt(abs({a}) + 0.25)",
                "log1p_abs": f"log(abs({a}) + 1.0)",
                "rsqrt_sq": f"rsqrt({a} * {a} + 1.0)",
                "exp_tanh": f"exp(tanh({a}))",
                "exp_neg_abs": f"exp(-abs({a}))",
                "neg": f"-({a})",
                "log1p_fn": f"log1p(abs({a}))",
                "expm1_tanh": f"expm1(tanh({a}))",
            }.get(f, f"{f}({a})")
            return f"tanh({e})" if bounded and f in ("relu", "abs", "gelu", "neg", "silu", "softplus", "log1p_fn") else e
        if c < 0.42:
            a, b = self.value(scope, depth - 1, bounded), self.value(scope, depth - 1, bounded)
            f = r.choice(["max", "min", "div", "pow"])
            if f == "div":
                return f"{a} / (1.0 + abs({b}))"
            if f == "pow":
                return f"pow(abs({a}) + 0.5, 1.5)" if not bounded else f"tanh(pow(abs({a}) + 0.5, 1.5))"
            return f"{f}({a}, {b})"
        if c < 0.52:
            return self.where(scope, depth, bounded)
        if c < 0.8:
            return self.reduction(scope, depth, bounded)
        return self.value(scope, 0, bounded)

    def condition(self, scope):
        r = self.r
        if scope and r.random() < 0.6:
            i, j = r.choice(scope), r.choice(scope)
            return r.choice([f"{i.name} < {j.name}", f"{i.name} % 2 == 0", f"{i.name} >= 1",
                             f"{i.name} != {j.name} && {j.name} <= 2", f"!({i.name} == 0)"])
        # a float comparison only on an input element (never on a computed value)
        ld = self.load(scope, 0, want_padded=False)
        if not ld.startswith("x"):
            return "1 < 2"
        return f"{ld} {r.choice(['>', '<=', '>='])} {r.choice(['0.0', '0.5', '-0.25'])}"

    def where(self, scope, depth, bounded):
        a, b = self.value(scope, depth - 1, bounded), self.value(scope, depth - 1, bounded)
        cond = self.condition(scope)
        if scope and self.r_guard.random() < 0.3:
            main, self.r = self.r, self.r_guard  # its draws from its own stream
            try:
                guarded = self.guarded(scope)
            finally:
                self.r = main
            if guarded:
                return guarded.format(other=b)
        return f"where({cond}, {a}, {b})"

    def guarded(self, scope):
        """A load kept in bounds by its where alone (passes/check.c reads it
        zero-padded): an index shifted by s read only where the condition
        leaves room — `where(i >= s, x[i - s], ..)`, `where(i + s < A, x[i +
        s], ..)`, both ends joined by &&, or the shift in the else branch of
        the negated test — as a format string taking the other branch."""
        r = self.r
        readable = [t for t in self.tensors if t.role != "output" and t.dims]
        pairs = [(t, d, ix) for t in readable for d, dim in enumerate(t.dims) for ix in scope
                 if ix.dim.text == dim.text]
        if not pairs:
            return None
        t, d, ix = r.choice(pairs)
        s = r.randint(1, 2)
        A = t.dims[d].text
        shifted, cond = r.choice([(f"{ix.name} - {s}", f"{ix.name} >= {s}"),
                                  (f"{ix.name} + {s}", f"{ix.name} + {s} < {A}"),
                                  (f"{ix.name} - {s}", f"{ix.name} > {s - 1} && {ix.name} < {A}"),
                                  (f"{ix.name} + {s}", f"!({ix.name} >= {A} - {s})")])
        idx = [self.index_into(dim, scope) for dim in t.dims]
        idx[d] = shifted
        load = f"{t.name}[{', '.join(idx)}]"
        if r.random() < 0.3:  # the shifted read in the else branch of the negated test
            return f"where(!({cond}), {{other}}, {load})"
        return f"where({cond}, {load}, {{other}})"

    def reduction(self, scope, depth, bounded):
        r = self.r
        op = r.choice(["sum", "sum", "sum", "max", "min", "prod"])
        n = r.randint(1, 3 if op != "prod" else 1)
        new = []
        # A float32 sum that one thread accumulates serially drifts from the
        # float64 one by more than 1e-5 past about 10^4 positive terms
        # (found on the H200: 12,672 terms, 2.7e-5); kbc's kernels sum
        # serially where a reduction stays in one thread (a scatter's body,
        # a nested reduction), so the generator stays below 2^13 terms in
        # all, nested reductions counting the terms of the enclosing ones.
        outer = getattr(self, "terms", 1)
        for _ in range(n):
            room = MAX_TERMS // (outer * self.numel([ix.dim for ix in new]))
            dims = [d for d in self.all_dims() if d.value(self.binding) <= min(room, 8 if op == "prod" else room)]
            if not dims:
                break
            d = r.choice(dims)
            new.append(Index(self.fresh("r"), d))
        if not new:
            return self.value(scope, 0, bounded)
        inner = scope + new
        self.terms = outer * self.numel([ix.dim for ix in new])
        body = self.value(inner, depth - 1)
        self.terms = outer
        # every reduction index used at least once: add a term reading it directly
        words = set(re.findall(r"\w+", body))
        for ix in new:
            if ix.name not in words:
                t = self.new_input([ix.dim]) if self.numel([ix.dim]) <= self.limit else None
                if t is None:
                    return self.value(scope, 0, bounded)
                body = f"({body} + {t.name}[{ix.name}])"
        if op == "prod":
            body = f"(1.0 + 0.25 * tanh({body}))"
        # read as a whole index somewhere but in a zero-padded load (which
        # accepts any index): its range can be inferred (seed 100360)
        unpadded = re.sub(r"\w+\?\[[^\]]*\]", "", body)
        def direct(ix):
            return re.search(rf"[\[,]\s*{ix.name}\s*[,\]]", unpadded) is not None
        heads = ", ".join(ix.name if direct(ix) and r.random() < 0.3 else f"{ix.name} < {ix.dim.text}" for ix in new)
        e = f"{op}({heads}: {body})"
        if op == "sum":
            # a mean rather than a sum (scaled by a power of 2, exactly):
            # values stay O(1), so that a later `x - t` does not subtract
            # two values of 10^4 to get one of 1, losing 4 digits that no
            # float32 kernel has (GPU seed 112152: `t + (x - t)`)
            n = self.numel([ix.dim for ix in new])
            if n >= 8:
                e = f"{2.0 ** -(n - 1).bit_length():.10g} * {e}"
        if op == "sum" and bounded:
            e = f"tanh({e})"
        return e

    # ---- statements --------------------------------------------------------
    def free_indices(self, dims):
        return [Index(self.fresh("i"), d) for d in dims]

    def stmt_define(self, out_role):
        r = self.r
        rank = r.choice([0, 1, 1, 2, 2, 2, 3, 3, 4] + ([5, 6] if r.random() < 0.1 else []))
        dims = self.random_dims(rank)
        free = self.free_indices(dims)
        work = self.numel(dims)
        if work > self.limit:
            return None
        rhs = self.value(free, r.randint(1, 4))
        name = self.fresh("t" if out_role == "tensor" else "y")
        self.lines.append(f"{'output' if out_role == 'output' else 'tensor'} {name} f32{self.shape_text(dims)}")
        lhs = name if rank == 0 else f"{name}[{', '.join(ix.name for ix in free)}]"
        self.stmts.append(f"{lhs} = {rhs}")
        t = Tensor(name, dims, out_role)
        self.tensors.append(t)
        return t

    def stmt_long_reduction(self, out_role):
        """y[o] = mean(l < L: x[l] * body(o, l)) or max / min, over a const
        axis of L >= 2^17 terms and at most 16 (emu) or 128 outputs: the
        reductions kbc splits across blocks (rfactor, passes/hoist.c, where
        sizes are known) or across a block's threads (parts), whose float32
        sums must stay within 1e-5 of float64 where a serial sum would not."""
        r = self.r
        O = self.random_dims(r.randint(0, 1))
        if self.numel(O) > (16 if self.size == "emu" else 128):
            return None
        L = r.choice([131101, 140009] + ([196613, 262147] if self.size != "emu" else []))
        if self.r_rows.random() < 0.5:
            # a length of many divisors (those above are prime or nearly):
            # hoist.c's row_parts cuts it in parts
            L = self.r_rows.choice([135168, 147456, 163840])
        # over one axis, or two (rfactor splits one of several out)
        if r.random() < 0.5:
            sizes = [L]
        else:
            p = r.choice([64, 127, 509])
            sizes = [p, -(-L // p)]
        dims, idx = [], []
        for v in sizes:
            ln = self.fresh("l")
            ld = Dim(ln, (lambda v: (lambda B: v))(v), ("const", v))
            ld.cval = v
            self.lines.append(f"axis {ln} const {v}")  # not in self.axes: no other tensor takes it
            dims.append(ld)
            idx.append(Index(self.fresh("r"), ld))
        x = self.new_input(dims)
        free = self.free_indices(O)
        saved, self.terms = getattr(self, "terms", 1), L  # nested reductions stay short
        body = self.value(free + idx, 2, bounded=True)
        self.terms = saved
        op = r.choice(["sum", "sum", "max", "min"])
        return self.reduce_stmt(out_role, op, idx, f"{x.name}[{', '.join(ix.name for ix in idx)}] * {body}", L, free)

    def reduce_stmt(self, out_role, op, red, body, terms, free):
        """y[free] = op(red: body), a sum of `terms` terms scaled to a mean
        by a power of 2 (exactly): the new tensor."""
        heads = ", ".join(f"{ix.name} < {ix.dim.text}" for ix in red)
        e = f"{op}({heads}: {body})"
        if op == "sum":
            e = f"{2.0 ** -(terms - 1).bit_length():.10g} * {e}"
        dims = [ix.dim for ix in free]
        name = self.fresh("t" if out_role == "tensor" else "y")
        self.lines.append(f"{'output' if out_role == 'output' else 'tensor'} {name} f32{self.shape_text(dims)}")
        lhs = name if not free else f"{name}[{', '.join(ix.name for ix in free)}]"
        self.stmts.append(f"{lhs} = {e}")
        t = Tensor(name, dims, out_role)
        self.tensors.append(t)
        return t

    def stmt_contraction(self, out_role):
        """T[M.., N..] = epilogue(sum(K..: A[M.., K..] * B[K.., N..])): a GEMM-shaped statement."""
        r = self.r
        M = self.random_dims(r.randint(1, 2))
        N = self.random_dims(r.randint(1, 2))
        Kd = self.random_dims(r.randint(1, 2))
        # a fifth of the time (its own draws: r's stay as they were) the
        # fold's tail's shape: two M indices, one N index of constant
        # extent, the product folded over one M index and its rows finished
        # over N (codegen/gemm_tail.c needs every column in one tile)
        rt = self.r_tail
        shaped = rt.random() < 0.2
        if shaped:
            if len(M) == 1:
                M = M + [rt.choice(self.all_dims())]
            N = [rt.choice(self.consts)]
            if self.r_tail_vec.random() < 0.4:
                # rows of 64 or more columns: the tail a warp a row
                N = [self.new_const(self.r_tail_vec.choice([64, 80, 96, 128]))]
        if self.numel(M + N) > self.limit or self.numel(M + Kd) > self.limit or self.numel(Kd + N) > self.limit:
            return None
        if self.numel(M + N + Kd) > self.work_limit or self.numel(Kd) > MAX_TERMS:
            return None
        fm, fn = self.free_indices(M), self.free_indices(N)
        ks = [Index(self.fresh("k"), d) for d in Kd]
        am = fm + ks
        r.shuffle(am)
        bn = ks + fn
        r.shuffle(bn)
        # a third of the time both operands contiguous along K, as a linear
        # layer's x . w^T (the wgmma K loop's case on sm_90a)
        if self.r_late.random() < 0.35:
            am = [ix for ix in am if ix not in ks] + ks
            bn = [ix for ix in bn if ix not in ks] + ks
        A = self.new_input([ix.dim for ix in am])
        Bt = self.new_input([ix.dim for ix in bn])
        heads = ", ".join(f"{ix.name} < {ix.dim.text}" for ix in ks)
        a_val = f"{A.name}[{', '.join(ix.name for ix in am)}]"
        # a fifth of the time A an elementwise function of its load and of a
        # row vector (M indices) and a k vector (K indices), as attention's
        # probabilities exp(s - m) / l are (codegen/gemm_xform.c)
        rx = self.r_xform
        if rx.random() < 0.2:
            R, G = self.new_input([ix.dim for ix in fm]), self.new_input([ix.dim for ix in ks])
            rv = f"{R.name}[{', '.join(ix.name for ix in fm)}]"
            gv = f"{G.name}[{', '.join(ix.name for ix in ks)}]"
            a_val = rx.choice([f"exp({a_val} - {rv})", f"({a_val} - {rv}) * {gv}", f"relu({a_val} * {gv} + {rv})",
                               f"exp({a_val} * {gv}) * {rv}"])
        prod = f"sum({heads}: {a_val} * {Bt.name}[{', '.join(ix.name for ix in bn)}])"
        # a mean over a long K (scaled by a power of 2, exactly): a later
        # softmax or difference of sums of 10^3 loses digits that no
        # float32 kernel keeps (GPU seed 212530: a softmax over sums of
        # 4,847 products, 1.1e-5 off); below 256 terms the plain product
        # (no epilogue) stays in the mix
        nk = self.numel(Kd)
        if nk >= 256:
            prod = f"{2.0 ** -(nk - 1).bit_length():.10g} * {prod}"
        free = fm + fn
        epi = r.choice(["plain", "bias", "act", "scale"])
        if epi == "bias":
            bias = self.load(free, 0, want_padded=False)
            prod = f"{bias} + {prod}"
        elif epi == "act":
            prod = f"{r.choice(['relu', 'gelu', 'tanh', 'sigmoid'])}({prod})"
        elif epi == "scale":
            prod = f"0.125 * {prod}"
        # the product summed over one of its N indices, as KernelBench's
        # level-2 chains write it (`sum(h: sum(k: x[b, k] * w[h, k]) / 2)`):
        # a nested contraction (passes/distribute.c, hoist.c)
        nested = fn and r.random() < 0.25
        if nested:
            n = r.choice(fn)
            prod = f"sum({n.name} < {n.dim.text}: {prod})"
            free = [ix for ix in free if ix is not n]
        name = self.fresh("t" if out_role == "tensor" else "y")
        perm = list(free)
        if r.random() < 0.3:
            r.shuffle(perm)
        # a third of the time the product reduced over some of its M or N
        # indices by the next statement alone (`m[n, c, i, j] = min(z:
        # conv[n, c, z, i, j])`): the reduction folded into the GEMM's
        # tiles (codegen/gemm_fold.c), the product a temporary nobody else
        # reads
        sides = [x for x in (fm, fn) if len(x) > 1]
        if not nested and shaped and len(fm) > 1:
            return self.fold_contraction(out_role, name, perm, prod, fm, fn, tail=True)
        if not nested and sides and self.r_late.random() < 0.35:
            side = self.r_late.choice(sides)
            return self.fold_contraction(out_role, name, perm, prod, side, fn if side is fm else fm)
        self.lines.append(f"{'output' if out_role == 'output' else 'tensor'} {name} f32{self.shape_text([ix.dim for ix in perm])}")
        self.stmts.append(f"{name}[{', '.join(ix.name for ix in perm)}] = {prod}")
        t = Tensor(name, [ix.dim for ix in perm], out_role)
        self.tensors.append(t)
        return t

    def fold_contraction(self, out_role, pname, perm, prod, side, other, tail=False):
        """pname[perm] = prod, then y[kept] = op(R: body(pname[perm])) over a
        nonempty proper subset R of one side's indices (with tail: then
        always the rows finished over other's index)."""
        r = self.r_late
        R = r.sample(side, r.randint(1, len(side) - 1))
        kept = [ix for ix in perm if ix not in R]
        self.lines.append(f"tensor {pname} f32{self.shape_text([ix.dim for ix in perm])}")
        self.stmts.append(f"{pname}[{', '.join(ix.name for ix in perm)}] = {prod}")
        op = r.choice(["sum", "max", "min"])
        body = f"{pname}[{', '.join(ix.name for ix in perm)}]"
        form = r.choice(["plain", "tanh", "times"])
        if form == "tanh":
            body = f"tanh({body})"
        elif form == "times":  # a load beside it over the kept and reduced indices
            over = r.sample(kept + R, r.randint(1, len(kept + R)))
            x = self.new_input([ix.dim for ix in over])
            body = f"{body} * {x.name}[{', '.join(ix.name for ix in over)}]"
        t = self.reduce_stmt(out_role, op, R, body, self.numel([ix.dim for ix in R]), kept)
        # half the time its rows finished over one kept index by the next
        # statements (a bounded normalization): where that index is the
        # product's N, the fold's tail (codegen/gemm_tail.c)
        rt = self.r_tail
        if len(kept) >= 2 and (tail or rt.random() < 0.5):
            a = rt.choice(other if other and (tail or rt.random() < 0.75) else kept)
            rows = [ix for ix in kept if ix is not a]
            at = f"tanh({t.name}[{', '.join(ix.name for ix in kept)}])"
            body = at
            if self.r_tail_vec.random() < 0.5:
                # beside a vector along the row (a weighted row sum: the
                # tail's column loop reads the row's values beside memory)
                v = self.new_input([a.dim])
                body = f"{at} * {v.name}[{a.name}]"
            red = self.reduce_stmt("tensor", rt.choice(["sum", "max"]), [a], body, self.numel([a.dim]), rows)
            z = self.fresh("y")
            self.lines.append(f"output {z} f32{self.shape_text([ix.dim for ix in kept])}")
            self.stmts.append(f"{z}[{', '.join(ix.name for ix in kept)}] = "
                              f"exp({at} - {red.name}[{', '.join(ix.name for ix in rows)}])")
            self.tensors.append(Tensor(z, [ix.dim for ix in kept], "output"))
        return t

    def stmt_scatter(self):
        """t[f(i)] += body: a declared target, indices bound by direct reads."""
        r = self.r
        # the scatter indices, each read directly by a new input
        n = r.randint(1, 3)
        idx = [Index(self.fresh("s"), d) for d in self.random_dims(n)]
        if self.numel([ix.dim for ix in idx]) > self.work_limit // 4:
            return None
        targets = []
        tdims, texprs = [], []
        for _ in range(r.randint(1, 2)):
            ix = r.choice(idx)
            f = ix.dim.form
            opts = [("direct", ix.dim, ix.name)]
            if f[0] == "prod" and f[2].form[0] == "const":
                opts.append(("div", f[1], f"{ix.name} / {f[2].text}"))
                opts.append(("mod", f[2], f"{ix.name} % {f[2].text}"))
            for c in self.consts:
                if c.cval > 1:
                    opts.append(("mod", c, f"{ix.name} % {c.text}"))
            rel = [d for d in self.all_dims() if d.form[0] == "rel" and d.form[1].text == ix.dim.text]
            others = [j for j in idx if j.dim.text == ix.dim.text and j is not ix]
            if rel and others:
                opts.append(("rel", rel[0], f"{ix.name} - {others[0].name} + {ix.dim.text} - 1"))
            kind, d, e = r.choice(opts)
            tdims.append(d)
            texprs.append(e)
        if self.numel(tdims) > self.limit:
            return None
        name = self.fresh("g")
        self.lines.append(f"output {name} f32{self.shape_text(tdims)}")
        # the body reads every scatter index directly
        reads = []
        rem = list(idx)
        while rem:
            k = r.randint(1, len(rem))
            part, rem = rem[:k], rem[k:]
            t = self.new_input([ix.dim for ix in part])
            reads.append(f"{t.name}[{', '.join(ix.name for ix in part)}]")
        body = " * ".join(reads)
        if r.random() < 0.4:
            body = f"{body} * {self.value(idx, 1)}"
        self.stmts.append(f"{name}[{', '.join(texprs)}] += {body}")
        if r.random() < 0.3:  # a second += into the same target
            # read in between, by a temporary that an output reads after it
            # (a rewrite moving the read past the += reads other values)
            between = None
            if r.random() < 0.5:
                fi = [self.fresh("i") for _ in tdims]
                between = self.fresh("e")
                self.lines.append(f"tensor {between} f32{self.shape_text(tdims)}")
                self.stmts.append(f"{between}[{', '.join(fi)}] = tanh({name}[{', '.join(fi)}]) * 2.0")
            t = self.new_input([ix.dim for ix in idx])
            self.stmts.append(f"{name}[{', '.join(texprs)}] += {t.name}[{', '.join(ix.name for ix in idx)}]")
            if between:
                fi = [self.fresh("i") for _ in tdims]
                after = self.fresh("y")
                self.lines.append(f"output {after} f32{self.shape_text(tdims)}")
                self.stmts.append(f"{after}[{', '.join(fi)}] = {between}[{', '.join(fi)}] + {name}[{', '.join(fi)}]")
        self.tensors.append(Tensor(name, tdims, "output"))
        return True

    def stmt_library(self):
        """Whole-tensor statements: softmax, layernorm, linear, relu, elementwise."""
        r = self.r
        src = [t for t in self.tensors if t.role in ("input", "tensor") and t.dims]
        if not src:
            return None
        x = r.choice(src)
        kind = r.choice(["softmax", "layernorm", "linear", "elementwise", "relu"])
        name = self.fresh("w")
        if kind == "softmax":
            ax = r.randint(-len(x.dims), len(x.dims) - 1)
            self.stmts.append(f"{name} = softmax({x.name}, axis={ax})")
            dims = x.dims
        elif kind == "layernorm":
            # a fresh input plus a bounded x, so that no row is constant or
            # large against its spread: the variance would be rounding noise,
            # magnified by rsqrt(var + eps)
            last = x.dims[-1]
            wt, bt, noise = self.new_input([last]), self.new_input([last]), self.new_input(x.dims)
            self.stmts.append(f"{name} = layernorm({noise.name} + 0.25 * tanh({x.name}), {wt.name}, {bt.name}, 1e-5)")
            dims = x.dims
        elif kind == "linear":
            last = x.dims[-1]
            o = r.choice(self.all_dims())
            if self.numel(x.dims[:-1] + [o]) > self.limit or self.numel(x.dims + [o]) > self.work_limit:
                return None
            wt = self.new_input([o, last])
            args = [x.name, wt.name]
            if r.random() < 0.6:
                args.append(self.new_input([o]).name)
            self.stmts.append(f"{name} = linear({', '.join(args)})")
            dims = x.dims[:-1] + [o]
        elif kind == "relu":
            self.stmts.append(f"{name} = relu({x.name})")
            dims = x.dims
        else:
            same = [t for t in src if [d.text for d in t.dims] == [d.text for d in x.dims]]
            y = r.choice(same)
            self.stmts.append(f"{name} = tanh({x.name}) * {y.name} + 0.5 * {x.name}")
            dims = x.dims
        out = self.fresh("y")
        self.lines.append(f"output {out} f32{self.shape_text(dims)}")
        self.stmts.append(f"{out} = {name}")
        self.tensors.append(Tensor(name, dims, "tensor"))
        self.tensors.append(Tensor(out, dims, "output"))
        return True

    def stmt_attention(self):
        """An attention chain, in one of its spellings: scores (a
        contraction over the head dimension, scaled, maybe with a bias of
        lower rank and a causal mask by where), a softmax over the columns
        (the library's, or max / sum of exp / divide written out), and a
        contraction of the probabilities with the values over the columns."""
        r = self.r
        Bd = self.random_dims(r.randint(0, 2))
        R = r.choice(self.all_dims())
        C = R if r.random() < 0.5 else r.choice(self.all_dims())
        D = r.choice([d for d in self.all_dims() if d.value(self.binding) <= 64] or [None])
        E = D if r.random() < 0.5 else r.choice([d for d in self.all_dims() if d.value(self.binding) <= 64] or [None])
        # heads merged in the output's channel axis (out[.., f] reading the
        # head f / Q): a product dim P = A * Q, A the head dim, Q the head size
        merged = [d for d in self.all_dims() if d.form[0] == "prod" and d.form[2].form[0] == "const"
                  and d.form[2].cval >= 2 and d.value(self.binding) <= 256]
        P = r.choice(merged) if merged and r.random() < 0.3 else None
        if P is not None:
            Bd = [P.form[1]] + Bd[:1]
            E = P.form[2]
        if D is None or E is None:
            return None
        if (self.numel(Bd + [R, C]) > self.limit or self.numel(Bd + [R, C, max(D, E, key=lambda d: d.value(self.binding))]) > self.work_limit
                or self.numel([C]) > MAX_TERMS or self.numel([D]) > MAX_TERMS):
            return None
        if self.size == "emu":
            # the emulator runs a fused attention block by block, each
            # 64 rows by 64 columns of N2 and 256 threads whatever the sizes:
            # its time goes with the tiles, not with the elements
            tiles = lambda d, t: -(-d.value(self.binding) // t)
            if self.numel(Bd) * tiles(R, 64) * tiles(C, 64) * tiles(E, 64) * tiles(D, 32) > 256:
                return None
        b = self.free_indices(Bd)
        ri, ci, di, ei = Index(self.fresh("i"), R), Index(self.fresh("j"), C), Index(self.fresh("d"), D), Index(self.fresh("e"), E)
        def operand(idx):  # an input over these indices, in some order
            order = list(idx)
            if r.random() < 0.3:
                r.shuffle(order)
            t = self.new_input([ix.dim for ix in order])
            return t, order
        q, qo = operand(b + [ri, di])
        k, ko = operand(b + [ci, di])
        vb = b[1:] if b and (P is not None or r.random() < 0.25) else b  # shared across a batch index (multi-query)
        fi = Index(self.fresh("f"), P) if P is not None else None
        v, vo = operand(vb + [ci, fi if fi else ei])
        at = lambda t, order: f"{t.name}[{', '.join(ix.name for ix in order)}]"
        scale = 0.125 if r.random() < 0.5 else 0.25
        score = f"{scale} * sum({di.name} < {D.text}: {at(q, qo)} * {at(k, ko)})"
        if r.random() < 0.3:  # a bias of lower rank (relative-position style): over the columns, or rows
            bt = self.new_input([C] if r.random() < 0.5 else [R, C])
            score += f" + {bt.name}[{ci.name}]" if len(bt.dims) == 1 else f" + {bt.name}[{ri.name}, {ci.name}]"
        if C is R and r.random() < 0.5:  # causal: column 0 is never masked
            score = f"where({ci.name} <= {ri.name}, {score}, -1e30)"
        bs = ", ".join(ix.name for ix in b)
        pre = bs + ", " if bs else ""
        sname, pname = self.fresh("s"), self.fresh("p")
        self.stmts.append(f"{sname}[{pre}{ri.name}, {ci.name}] = {score}")
        row = f"{pre}{ri.name}"
        spelling = r.choice(["library", "written", "unnormalized"])
        if spelling == "library":
            self.stmts.append(f"{pname} = softmax({sname}, axis=-1)")
        else:
            mx, den = self.fresh("mx"), self.fresh("den")
            c2 = self.fresh("j")
            self.stmts.append(f"{mx}[{row}] = max({c2}: {sname}[{row}, {c2}])")
            if spelling == "written":
                self.stmts.append(f"{den}[{row}] = sum({c2}: exp({sname}[{row}, {c2}] - {mx}[{row}]))")
                self.stmts.append(f"{pname}[{row}, {ci.name}] = exp({sname}[{row}, {ci.name}] - "
                                  f"{mx}[{row}]) / {den}[{row}]")
            else:  # exp(s - max) as a tensor of its own (maybe masked), the division after the contraction
                ex = f"exp({sname}[{row}, {ci.name}] - {mx}[{row}])"
                if C is R and r.random() < 0.4:
                    ex = f"where({ci.name} <= {ri.name}, {ex}, 0.0)"
                self.stmts.append(f"{pname}[{row}, {ci.name}] = {ex}")
                self.stmts.append(f"{den}[{row}] = sum({c2}: {pname}[{row}, {c2}])")
            if r.random() < 0.4:  # the log-sum-exp kept, as a backward pass would
                lse = self.fresh("lse")
                self.lines.append(f"output {lse} f32{self.shape_text([ix.dim for ix in b + [ri]])}")
                self.stmts_after = getattr(self, "stmts_after", []) + [f"{lse}[{row}] = {mx}[{row}] + log({den}[{row}])"]
                self.tensors.append(Tensor(lse, [ix.dim for ix in b + [ri]], "output"))
        out = self.fresh("y")
        free = (b[1:] + [ri, fi]) if fi else (b + [ri, ei])
        perm = list(free)
        if r.random() < 0.3:
            r.shuffle(perm)
        self.lines.append(f"output {out} f32{self.shape_text([ix.dim for ix in perm])}")
        tail = f" / {den}[{row}]" if spelling == "unnormalized" else ""
        prow = row
        if fi:  # the head read as f / Q wherever the chain is read
            heads = f"{fi.name} / {P.form[2].cval}"
            prow = ", ".join([heads] + [ix.name for ix in b[1:]] + [ri.name])
            tail = tail.replace(f"[{row}]", f"[{prow}]")
        self.stmts.append(f"{out}[{', '.join(ix.name for ix in perm)}] = sum({ci.name}: {pname}[{prow}, {ci.name}] * "
                          f"{at(v, vo)}){tail}")
        self.stmts += getattr(self, "stmts_after", [])
        self.stmts_after = []
        self.tensors.append(Tensor(out, [ix.dim for ix in perm], "output"))
        # (not over a single column: ds = p * (dp - sum(dp * p)) is then 0 - 0,
        # its float32 rounding against float64's arbitrary, seed 12083)
        if spelling != "unnormalized" and not fi and vb is b and r.random() < 0.4 and C.value(self.binding) > 1:
            self.attention_backward(b, ri, ci, di, ei, (q, qo), (k, ko), (v, vo), pname, scale)
        return True

    def attention_backward(self, b, ri, ci, di, ei, qq, kk, vv, pname, scale):
        """The chain's backward, as users write it from the chain rule: the
        output's gradient g, dp = g . v^T, ds = p * (dp - rowsum(dp * p)),
        and some of dq (over the columns), dk and dv (over the rows) —
        what codegen/recompute.c recomputes (the `recompute` variant)."""
        r = self.r
        at = lambda t, order: f"{t.name}[{', '.join(ix.name for ix in order)}]"
        pre = "".join(ix.name + ", " for ix in b)
        g = self.new_input([ix.dim for ix in b + [ri, ei]])
        gi = f"{g.name}[{pre}{ri.name}, {ei.name}]"
        dp, ds, j2 = self.fresh("dp"), self.fresh("ds"), self.fresh("j")
        self.stmts.append(f"{dp}[{pre}{ri.name}, {ci.name}] = sum({ei.name}: {gi} * {at(*vv)})")
        self.stmts.append(f"{ds}[{pre}{ri.name}, {ci.name}] = {pname}[{pre}{ri.name}, {ci.name}] * "
                          f"({dp}[{pre}{ri.name}, {ci.name}] - sum({j2}: {dp}[{pre}{ri.name}, {j2}] * "
                          f"{pname}[{pre}{ri.name}, {j2}]))")
        part = None
        if r.random() < 0.35:  # a weighted row sum of ds: a partial row sum dq's recomputing chain takes along
            cw, part = self.new_input([ci.dim]), self.fresh("rs")
            self.lines.append(f"output {part} f32{self.shape_text([ix.dim for ix in b + [ri]])}")
            self.stmts.append(f"{part}[{pre}{ri.name}] = sum({ci.name}: {ds}[{pre}{ri.name}, {ci.name}] * {cw.name}[{ci.name}])")
            self.tensors.append(Tensor(part, [ix.dim for ix in b + [ri]], "output"))
        grads = [n for n in ("dq", "dk", "dv") if r.random() < 0.6] or ["dq"]
        for n in grads:
            name = self.fresh(n)
            if n == "dq":
                free, body = b + [ri, di], f"{scale} * sum({ci.name}: {ds}[{pre}{ri.name}, {ci.name}] * {at(*kk)})"
                if part and r.random() < 0.5:  # read back into dq: the chain's consumer split (y += rest)
                    body += f" + {part}[{pre}{ri.name}] * {at(*qq)}"
            elif n == "dk":
                free, body = b + [ci, di], f"{scale} * sum({ri.name}: {ds}[{pre}{ri.name}, {ci.name}] * {at(*qq)})"
            else:
                free, body = b + [ci, ei], f"sum({ri.name}: {pname}[{pre}{ri.name}, {ci.name}] * {gi})"
            self.lines.append(f"output {name} f32{self.shape_text([ix.dim for ix in free])}")
            self.stmts.append(f"{name}[{', '.join(ix.name for ix in free)}] = {body}")
            self.tensors.append(Tensor(name, [ix.dim for ix in free], "output"))

    def stmt_def_for(self):
        """def layer(h, l) { ... } unrolled by for over layer-indexed weights."""
        r = self.r
        src = [t for t in self.tensors if t.role == "input" and len(t.dims) >= 1]
        if not src:
            return None
        x = r.choice(src)
        last = x.dims[-1]
        L = r.randint(1, 3)
        if self.numel([last, last]) * L > self.limit or self.numel(x.dims + [last]) > self.work_limit:
            return None
        w = self.fresh("lw")
        b = self.fresh("lb")
        self.lines.append(f"input {w} f32[{L}, {last.text}, {last.text}]")
        self.lines.append(f"input {b} f32[{L}, {last.text}]")
        fn = self.fresh("layer")
        body = r.choice([f"return tanh(linear(h, {w}[l], {b}[l])) + h",
                         # eps 0.1: a row of z + h may be nearly constant for the
                         # random weights (the more so over a short last axis, 2 or
                         # 3), and rsqrt(var + 1e-5) magnifies its rounding 300x —
                         # PyTorch's own float32 missed 1e-5 in 2 of 100 draws of
                         # seed 701792's shapes (the GPU fuzzer's failure), none at 0.1
                         f"z = linear(h, {w}[l], {b}[l])\n  return layernorm(z + h, {b}[l], {b}[l], 0.1)",
                         # the logits scaled: over a long last axis (131 at the GPU's
                         # sizes) their float32 rounding, which exp carries into every
                         # probability, reached 1.07e-5 (GPU seed 701084)
                         f"return softmax(0.0625 * linear(h, {w}[l]), axis=-1)"])
        self.defs = getattr(self, "defs", []) + [f"def {fn}(h, l) {{\n  {body}\n}}"]
        cur = self.fresh("h")
        out = self.fresh("y")
        self.lines.append(f"output {out} f32{self.shape_text(x.dims)}")
        self.stmts.append(f"{cur} = {x.name}\nfor l in 0..{L} {{\n  {cur} = {fn}({cur}, l)\n}}\n{out} = {cur}")
        self.tensors.append(Tensor(out, x.dims, "output"))
        return True

    def stmt_conv_transpose(self, out_role):
        """y[b, c, o] = sum(ci, k < K: where((o + p - d*k) % s == 0,
        x?[b, ci, (o + p - d*k)/s] * w[ci, c, k], 0.0)): a transposed
        convolution of stride s, dilation d and padding p (1-D or 2-D,
        the congruence sometimes negated or joined by another test, a bias
        sometimes added), which passes/phase.c splits by phase."""
        r = self.r
        B, Cin, Cout = self.random_dims(3)
        sp = [r.choice([2, 2, 3, 4]) for _ in range(r.choice([1, 1, 2]))]
        Ls = [self.axes[r.choice(self.vars)] for _ in sp]
        free_b, free_c = Index(self.fresh("i"), B), Index(self.fresh("i"), Cout)
        spatial, taps, conds, xi, wi, odims = [], [], [], [], [], []
        for s, L in zip(sp, Ls):
            K, d, pad = r.randint(1, 5), r.choice([1, 1, 2, 3]), r.randint(0, 2)
            e = r.randint(0, d * (K - 1))
            od = Dim(f"{s}*{L.text} + {e}", (lambda L, s, e: (lambda Bd: s * L.value(Bd) + e))(L, s, e), ("axis", None))
            kd = Dim(str(K), (lambda K: (lambda Bd: K))(K), ("const", K))
            kd.cval = K
            o, k = Index(self.fresh("o"), od), Index(self.fresh("k"), kd)
            num = f"{o.name} + {pad} - {d}*{k.name}"
            conds.append(f"({num}) % {s} == 0" if r.random() < 0.7 else f"({d}*{k.name} - {o.name} - {pad}) % {s} == 0")
            if r.random() < 0.15:
                conds.append(f"{k.name} != {r.randint(0, K - 1)}")
            xi.append(f"({num})/{s}")
            spatial.append(o)
            taps.append(k)
            odims.append(od)
            wi.append(k.name)
        odims_all = [B, Cout] + odims
        kin = self.numel([Cin] + [k.dim for k in taps])
        if self.numel(odims_all) > self.limit or self.numel(odims_all) * kin > self.work_limit or kin > MAX_TERMS:
            return None
        x = self.new_input([B, Cin] + Ls)
        w = self.new_input([Cin, Cout] + [k.dim for k in taps])
        ci = Index(self.fresh("k"), Cin)
        heads = ", ".join([f"{ci.name} < {Cin.text}"] + [f"{k.name} < {k.dim.text}" for k in taps])
        body = (f"where({' && '.join(conds)}, {x.name}?[{free_b.name}, {ci.name}, {', '.join(xi)}] * "
                f"{w.name}[{ci.name}, {free_c.name}, {', '.join(wi)}], 0.0)")
        e = f"sum({heads}: {body})"
        free = [free_b, free_c] + spatial
        if r.random() < 0.4:
            e = f"{self.load(free, 0, want_padded=False)} + {e}"
        name = self.fresh("t" if out_role == "tensor" else "y")
        self.lines.append(f"{'output' if out_role == 'output' else 'tensor'} {name} f32{self.shape_text(odims_all)}")
        self.stmts.append(f"{name}[{', '.join(ix.name for ix in free)}] = {e}")
        t = Tensor(name, odims_all, out_role)
        self.tensors.append(t)
        return t

    def generate(self):
        r = self.r
        self.make_axes()
        if not self.bind():
            return None
        n_out = 0
        for _ in range(r.randint(1, 5)):
            c = r.random()
            role = "output" if r.random() < 0.5 else "tensor"
            if c < 0.02:
                ok = self.stmt_long_reduction(role)
            elif c < 0.07:
                ok = self.stmt_conv_transpose(role)
            elif c < 0.4:
                ok = self.stmt_define(role)
            elif c < 0.6:
                ok = self.stmt_contraction(role)
            elif c < 0.72:
                ok = self.stmt_scatter()
            elif c < 0.9:
                ok = self.stmt_library()
            elif c < 0.95:
                ok = self.stmt_attention()
            else:
                ok = self.stmt_def_for()
            if ok and role == "output" and c < 0.6:
                n_out += 1
            n_out += 1 if ok and c >= 0.6 else 0
        # every intermediate tensor read by an output (so nothing is dead code)
        inter = [t for t in self.tensors if t.role == "tensor"]
        if inter or not n_out:
            srcs = inter if inter else None
            if srcs is None:
                t = self.stmt_define("output")
                if t is None:
                    return None
            else:
                t = srcs[-1]
                free = self.free_indices(t.dims)
                rhs = " + ".join(f"{u.name}[{', '.join(self.index_into(d, free) for d in u.dims)}]" if u.dims else u.name
                                 for u in ([t] + [u for u in inter if u is not t][:3]))
                name = self.fresh("y")
                self.lines.append(f"output {name} f32{self.shape_text(t.dims)}")
                lhs = f"{name}[{', '.join(ix.name for ix in free)}]" if free else name
                self.stmts.append(f"{lhs} = {rhs}")
        text = "kernel fuzz\n" + "\n".join(self.lines) + "\n" + "\n".join(getattr(self, "defs", [])) + "\n" + \
            "\n".join(self.stmts) + "\n"
        return text, dict(self.binding)


def generate(seed, size="emu", features=()):
    """(spec_text, {var axis: value}) for seed; retries internally until the
    generator produces a spec within the size limits.  With the feature
    "batched", a program of independent batch points instead (batchgen.py)."""
    if "batched" in features:
        import batchgen
        return batchgen.generate(seed, size)
    for attempt in range(50):
        g = Gen(seed * 1000 + attempt, size, features)
        out = g.generate()
        if out:
            return out
    raise RuntimeError(f"specgen: no spec for seed {seed}")


def main(argv):
    size, features, seed = "emu", (), None
    i = 1
    while i < len(argv):
        if argv[i] == "--size":
            size = argv[i + 1]
            i += 2
        elif argv[i] == "--features":
            features = tuple(f for f in argv[i + 1].split(",") if f)
            i += 2
        else:
            seed = int(argv[i])
            i += 1
    if seed is None:
        print("usage: specgen.py SEED [--size emu|gpu] [--features LIST]", file=sys.stderr)
        return 2
    text, binding = generate(seed, size, features)
    sys.stdout.write(f"# seed {seed}, binding: {' '.join(f'{k}={v}' for k, v in binding.items())}\n{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
