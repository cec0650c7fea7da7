/* kbc.h — the public C API of kbc, a kernel compiler for tensor
 * computations written in index notation.
 *
 *   kbc_program *p;
 *   if (kbc_compile_file("softmax.kb", NULL, &p) != KBC_OK) {
 *     fprintf(stderr, "%s\n", kbc_last_error());
 *     return 1;
 *   }
 *   int64_t shape[3] = {4, 5, 6};
 *   kbc_arg args[] = {{"x", d_x, 3, shape, KBC_F32}, {"out", d_out, 3, shape, KBC_F32}};
 *   kbc_status s = kbc_program_launch(p, args, 2, cu_stream);   // asynchronous
 *   ...
 *   kbc_program_destroy(p);
 *
 * Conventions:
 *   - every call returns a kbc_status; on failure kbc_last_error() (per
 *     thread) says what went wrong, with the spec's diagnostics
 *     (file:line:col: error: ...) for KBC_ERROR_SPEC;
 *   - the library never prints and never exits;
 *   - handles are opaque; each kbc_program is released by one call,
 *     kbc_program_destroy, which frees everything it holds (device
 *     workspace and modules included);
 *   - the CUDA driver is loaded on first GPU use (dlopen): compiling and
 *     emitting code works on machines without a GPU;
 *   - GPU launches use the device's primary context (shared with PyTorch
 *     and the CUDA runtime) and the caller's stream.
 * A kbc_program may be used from one thread at a time. */
#ifndef KBC_H
#define KBC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(KBC_BUILDING)
#define KBC_API __attribute__((visibility("default")))
#else
#define KBC_API
#endif

typedef enum {
  KBC_OK = 0,
  KBC_ERROR_SPEC = 1,      /* the spec has errors; kbc_last_error() holds the diagnostics */
  KBC_ERROR_ARGUMENT = 2,  /* a bad argument: NULL, unknown name, wrong rank, shape or dtype, ... */
  KBC_ERROR_IO = 3,        /* a file could not be read or written */
  KBC_ERROR_NO_DEVICE = 4, /* no CUDA driver, no GPU, or no NVRTC */
  KBC_ERROR_CUDA = 5,      /* an NVRTC or CUDA Driver API call failed */
  KBC_ERROR_INTERNAL = 6,  /* a bug in kbc */
} kbc_status;

/* The message of the calling thread's last failed call ("" if none). */
KBC_API const char *kbc_last_error(void);
KBC_API const char *kbc_status_name(kbc_status s);
KBC_API const char *kbc_version(void);

typedef enum { KBC_PRECISION_FP32 = 0, KBC_PRECISION_TF32 = 1 } kbc_precision;
typedef enum { KBC_F32 = 0 } kbc_dtype;

typedef struct {
  const char *target;      /* "auto" (NULL means auto), "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a" */
  kbc_precision precision; /* fp32 (<= 1e-5 relative error) or tf32 (<= 2e-3, faster) */
  int device;              /* CUDA device ordinal for "auto" and launches */
  const char *config;      /* code generation switches, "KBC_GEMM_STAGES=3 KBC_GEMM_WGMMA=0" (the
                              KBC_* variables of docs/ARCHITECTURE.md, "Switches"; spaces or commas
                              between), used instead of a `kbc tune` record; the environment's
                              switches still override them.  NULL: none (the record, if any) */
} kbc_options;

typedef struct kbc_program kbc_program;

/* Parses, checks and generates code for a spec; the GPU code is compiled
 * with NVRTC (through the on-disk cache) on first launch or emit. */
KBC_API kbc_status kbc_compile_file(const char *path, const kbc_options *opt, kbc_program **out);
KBC_API kbc_status kbc_compile_string(const char *source, const char *name, const kbc_options *opt,
                              kbc_program **out);
KBC_API void kbc_program_destroy(kbc_program *p); /* NULL is fine */

/* ---- introspection ---- */
enum { KBC_MAX_RANK = 8 }; /* the largest rank of a spec's tensors */
typedef enum { KBC_ROLE_INPUT = 0, KBC_ROLE_OUTPUT = 1 } kbc_role;
typedef struct {
  const char *name;
  kbc_role role;
  kbc_dtype dtype;
  int rank;
} kbc_arg_info;

/* Arguments: the inputs, then the outputs, each in declaration order. */
KBC_API int kbc_program_num_args(const kbc_program *p);
KBC_API kbc_status kbc_program_arg_info(const kbc_program *p, int i, kbc_arg_info *out);
KBC_API const char *kbc_program_name(const kbc_program *p);
/* Kernels the last GPU launch ran (after fusion; code specialized for its
 * sizes or not), -1 before the first. */
KBC_API int kbc_program_num_kernels(const kbc_program *p);
/* Statements of the checked program (after the passes). */
KBC_API int kbc_program_num_statements(const kbc_program *p);
/* The compilation's diagnostics that did not stop it, as the failed
 * compilations' are in kbc_last_error() (file:line:col: ..., source line,
 * caret); "" when there are none.  Owned by p. */
KBC_API const char *kbc_program_diagnostics(const kbc_program *p);

/* ---- diagnostics as records (for tools that colour them or print them
 * as JSON) ---- */
typedef enum {
  KBC_DIAGNOSTIC_ERROR = 0,   /* the spec is wrong; the compilation failed */
  KBC_DIAGNOSTIC_WARNING = 1, /* a likely mistake that did not stop it: an input never read,
                                 a var or constant axis never used */
  KBC_DIAGNOSTIC_NOTE = 2,    /* more about the message before it */
} kbc_diagnostic_kind;

typedef struct {
  kbc_diagnostic_kind kind;
  const char *file;    /* the spec's name as given to the compile call */
  int line, column;    /* 1-based; 0 when the message has no place */
  const char *message; /* one line, without file, place and kind (an internal
                          error's ends "(this is a bug in kbc)") */
  const char *snippet; /* the source line and a caret line under the column,
                          each ending in a newline; "" when none */
} kbc_diagnostic;

/* The diagnostics of the calling thread's last kbc_compile_file,
 * kbc_compile_string or kbc_ast_dump call, failed or not, in the order
 * reported (the same messages as the text in kbc_last_error() or
 * kbc_program_diagnostics()); 0 when it had none, or failed before
 * reading the spec (a missing file: kbc_last_error() says so).  Strings
 * stay valid until that thread's next such call. */
KBC_API int kbc_last_num_diagnostics(void);
KBC_API kbc_status kbc_last_diagnostic(int i, kbc_diagnostic *out);
/* A program's own diagnostics (its compilation's warnings and notes), as
 * kbc_program_diagnostics() has them as text; strings owned by p. */
KBC_API int kbc_program_num_diagnostics(const kbc_program *p);
KBC_API kbc_status kbc_program_diagnostic(const kbc_program *p, int i, kbc_diagnostic *out);
/* Warnings among them (`kbc -Werror` fails on any). */
KBC_API int kbc_program_num_warnings(const kbc_program *p);
/* "error", "warning" or "note" ("?" for anything else). */
KBC_API const char *kbc_diagnostic_kind_name(kbc_diagnostic_kind kind);

/* Presets a var axis (like `kbc run --set`): checked against the shapes
 * of later calls instead of inferred from them.  value 0 clears it. */
KBC_API kbc_status kbc_program_bind_axis(kbc_program *p, const char *axis, int64_t value);

/* The spec's var axes in declaration order: how many, and axis i's name
 * and preset value (0: none). */
KBC_API int kbc_program_num_var_axes(const kbc_program *p);
KBC_API kbc_status kbc_program_var_axis(const kbc_program *p, int i, const char **name, int64_t *value);

/* What the presets make, without any tensor (the sizes `kbc verify` and
 * `kbc bench` draw their inputs for): every var axis must be preset (else
 * KBC_ERROR_ARGUMENT naming the missing ones); the derived axes and the
 * asserts are checked as at a launch, their errors naming the spec's
 * lines.  Then each argument's shape (kbc_program_arg_shape: rank
 * entries, kbc_arg_info's rank) and: */
typedef struct {
  int64_t elements; /* inputs, outputs and temporaries together */
  double flops;     /* floating-point operations of one run */
  double bytes;     /* the fewest bytes of one run: every input read and every output written once */
} kbc_binding_info;
KBC_API kbc_status kbc_program_binding(kbc_program *p, kbc_binding_info *out);
KBC_API kbc_status kbc_program_arg_shape(kbc_program *p, int i, int64_t *shape);

/* Specialization: the first max_bindings distinct bindings (values of the
 * var axes) a program is launched with each get code generated and
 * compiled for those exact sizes (the spec re-checked with its var axes
 * made constants: every schedule decided on exact extents, the sizes folded
 * into the code), made at that binding's first launch and kept; other
 * bindings run the generic code.  0 turns it off.  The default is the
 * environment's KBC_SPECIALIZE (16 when unset).  kbc_program_emit shows the
 * specialized code when it is on and every var axis is bound
 * (kbc_program_bind_axis).  Takes effect for bindings not yet launched. */
KBC_API kbc_status kbc_program_set_specialize(kbc_program *p, int max_bindings);

/* Names where later calls' arguments come from (`kbc run` gives its
 * inputs file) in the messages about them: "in.safetensors: error: missing
 * input 'x'".  NULL (the default): the program's name. */
KBC_API kbc_status kbc_program_set_args_origin(kbc_program *p, const char *origin);

/* ---- running ---- */
typedef struct {
  const char *name;      /* an input or output of the spec */
  void *data;            /* device pointer (launch) or host pointer (run_cpu) */
  int rank;
  const int64_t *shape;  /* rank extents (NULL for rank 0) */
  kbc_dtype dtype;
} kbc_arg;

/* Infers the var axes from the inputs' shapes, checks every argument
 * (all inputs and outputs present, ranks, shapes, dtypes), and launches
 * the kernels on `cu_stream` (a CUstream; NULL = the default stream).
 * Asynchronous: returns once the kernels are queued.  Temporaries live in a
 * device workspace owned by the program (grown as needed), and a reduction
 * to a scalar split across the grid keeps its blocks' parts in the
 * program's module: launches of one program must not overlap (queue them
 * on one stream, or order them).  No output may share memory with an input
 * or another output: kernels that do not depend on each other through the
 * spec's tensors may run side by side (a replayed graph's branches). */
KBC_API kbc_status kbc_program_launch(kbc_program *p, const kbc_arg *args, size_t n, void *cu_stream);

/* The same computation on the CPU reference interpreter (host pointers;
 * accumulates in double). */
KBC_API kbc_status kbc_program_run_cpu(kbc_program *p, const kbc_arg *args, size_t n);

/* The reference `kbc verify` checks the GPU against: the interpreter on
 * the program as the spec states it (lowered and bounds-checked, before
 * any rewriting pass), so that a pass that changed the meaning shows as a
 * mismatch rather than on both sides; where that program would take more
 * than 4e8 flops for this binding (a sum the passes hoist out of a loop,
 * evaluated per element), the transformed one, as kbc_program_run_cpu.
 * *as_stated (may be NULL) tells which ran. */
KBC_API kbc_status kbc_program_run_reference(kbc_program *p, const kbc_arg *args, size_t n, int *as_stated);

/* Shapes of the outputs for the given inputs (for callers that allocate
 * outputs): fills shape (room for 8 extents) and *rank of output `name`.
 * Only the inputs' names, ranks and shapes are read; data may be NULL. */
KBC_API kbc_status kbc_program_output_shape(kbc_program *p, const kbc_arg *inputs, size_t n, const char *name,
                                    int64_t *shape, int *rank);

/* ---- inspection ---- */
/* "ir", "cuda", "ptx", "cubin", "resources" (per kernel: registers,
 * spill bytes, stack, shared memory, from ptxas), or the launch plan for
 * the var axes bound with kbc_program_bind_axis (all of them): "plan" (a
 * table) or "plan-json" (kernels in launch order with family, statements,
 * grid, block, shared memory and registers; the workspace's temporaries;
 * see runtime/plan.h): the text (or bytes) into *out, allocated with
 * malloc (release with kbc_free); *len its length.  Every kind but "ir"
 * generates code for the target (an explicit one needs no GPU) and all but
 * "ir" and "cuda" compile it with NVRTC. */
KBC_API kbc_status kbc_program_emit(kbc_program *p, const char *what, char **out, size_t *len);

/* ---- tuning (`kbc tune`) ----
 * A record of code generation switches (kbc_options.config's form) for p
 * at the binding of its preset var axes (kbc_program_bind_axis: all of
 * them) and its target, kept in the kernel cache's directory: every later
 * compilation of the same program (the same checked IR: comments and
 * spacing aside) at that binding, target and precision uses them, unless
 * kbc_options.config gives its own or KBC_TUNE=0.  settings NULL removes
 * the record; comment (NULL: none) is kept in it as '#' lines. */
KBC_API kbc_status kbc_program_tune_store(kbc_program *p, const char *settings, const char *comment);
/* The record's settings into *out (malloc'ed, release with kbc_free; ""
 * where the defaults were fastest), or *out = NULL where there is none. */
KBC_API kbc_status kbc_program_tune_load(kbc_program *p, char **out);

/* The IR as printed after lowering and after each pass (after NULL or
 * "all"), or after the one pass named `after` (kbc_pass_name), as `kbc
 * compile --emit ir [--after PASS]`: the text into *out (malloc'ed, release
 * with kbc_free), *len its length.  Runs the front half again on p's
 * source. */
KBC_API kbc_status kbc_program_ir_dump(kbc_program *p, const char *after, char **out, size_t *len);
/* The syntax tree of source as parsed (no checks beyond the syntax), as
 * `kbc compile --emit ast`; name is the file name of messages (NULL:
 * "<string>").  A syntax error is KBC_ERROR_SPEC with the diagnostics. */
KBC_API kbc_status kbc_ast_dump(const char *source, const char *name, char **out, size_t *len);
/* The compiler's passes in order, lowering first: the i-th's name and
 * one-line help, NULL past the last. */
KBC_API const char *kbc_pass_name(int i);
KBC_API const char *kbc_pass_help(int i);
KBC_API void kbc_free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif
