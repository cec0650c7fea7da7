/* main.c — the kbc command-line tool: dispatch, help, check, compile.
 * Every command reaches the compiler through the public API (kbc.h).
 *
 *   kbc check   SPEC
 *   kbc compile SPEC --emit ir|ast|cuda|ptx|cubin|resources|plan [--after PASS] [-o FILE] ...
 *   kbc run     SPEC --inputs IN --outputs OUT [--backend cpu] ...   (cmd_run.c)
 *   kbc bench, info (cmd_gpu.c), kbc verify (cmd_verify.c)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kbc.h"
#include "runtime/rt_file.h"

#include "support/version.h"
#define KBC_VERSION_STRING KBC_VERSION

static const char main_help[] =
    "usage: kbc COMMAND [ARGS]\n"
    "\n"
    "kbc compiles tensor computations written in index notation (spec files)\n"
    "into GPU kernels, and runs them on a CPU reference interpreter.\n"
    "\n"
    "commands:\n"
    "  check SPEC             parse and check a spec; print diagnostics\n"
    "  compile SPEC --emit K  print the IR, the CUDA C, PTX, resources or the launch plan\n"
    "  run SPEC ...           run a spec on inputs from a safetensors file (GPU or CPU)\n"
    "  verify SPEC --set ...  check the GPU kernels against the CPU interpreter on random inputs\n"
    "  bench SPEC --set ...   time a spec on the GPU on random inputs, with its roofline\n"
    "  info                   versions, targets, driver, devices, kernel cache\n"
    "\n"
    "  kbc COMMAND --help     help for one command\n"
    "  kbc --version          the version\n"
    "\n"
    "exit status: 0 success, 1 error in the spec or the data, 2 usage error\n";

static const char check_help[] =
    "usage: kbc check SPEC\n"
    "\n"
    "Parses SPEC, resolves its names, infers index ranges and proves every\n"
    "access in bounds for all values of the var axes.  Prints diagnostics as\n"
    "file:line:col: error: message, with the source line and a caret.\n";

/* The kinds of `kbc compile --emit`, written once: the name, the help
 * (continuation lines indented to the help's column, 17), and the CLI_EMIT_
 * constant the dispatch in cmd_compile switches on.  The usage line, the
 * help and the validation's message all come from this list. */
#define CLI_EMIT_KINDS(X)                                                                          \
  X(IR, "ir", "the IR after lowering and after every pass")                                        \
  X(AST, "ast", "the syntax tree as parsed")                                                        \
  X(CUDA, "cuda", "the generated CUDA C (one kernel per fusion group)")                             \
  X(PTX, "ptx", "its PTX (NVRTC)")                                                                  \
  X(CUBIN, "cubin", "its cubin (NVRTC)")                                                            \
  X(RESOURCES, "resources", "registers, spills, stack and shared memory per kernel")                \
  X(PLAN, "plan",                                                                                   \
    "the launch plan for one binding (every var axis given with\n"                                 \
    "                 --set): each launch in order (zero-fills included) with its\n"               \
    "                 schedule family, statements, grid, block, shared memory and\n"               \
    "                 registers; the workspace's temporaries and its size (for an\n"               \
    "                 explicit target, of the code generated for an H200-like\n"                   \
    "                 device, 132 SMs, as --emit cuda; for auto, for the GPU's)")

typedef enum {
#define X(id, name, help) CLI_EMIT_##id,
  CLI_EMIT_KINDS(X)
#undef X
  CLI_EMIT_NONE
} cli_emit;

static const struct {
  const char *name, *help;
} emit_kinds[] = {
#define X(id, name, help) {name, help},
    CLI_EMIT_KINDS(X)
#undef X
};
enum { N_EMIT = sizeof emit_kinds / sizeof emit_kinds[0] };

static cli_emit emit_find(const char *name) {
  for (int i = 0; i < N_EMIT; i++)
    if (!strcmp(emit_kinds[i].name, name)) return (cli_emit)i;
  return CLI_EMIT_NONE;
}

/* The kinds' names joined: "ir|ast|...|plan", or "ir, ast, ... or plan". */
static void emit_list(kbc_buf *b, const char *sep, const char *last_sep) {
  for (int i = 0; i < N_EMIT; i++)
    kbc_buf_printf(b, "%s%s", i == 0 ? "" : i == N_EMIT - 1 ? last_sep : sep, emit_kinds[i].name);
}

static const char compile_options_help[] =
    "  --json         with --emit plan: as JSON, {\"kernels\": [{\"name\", \"family\",\n"
    "                 \"statements\", \"grid\", \"block\", \"smem_bytes\", \"registers\"}],\n"
    "                 \"buffers\": [{\"name\", \"shape\", \"bytes\"}], \"workspace_bytes\"};\n"
    "                 grid and block are [x, y, z]; smem_bytes is dynamic + static;\n"
    "                 each buffer starts at a multiple of 256 bytes, so workspace_bytes\n"
    "                 is the sum of the buffers' bytes each rounded up to 256\n"
    "  --set AXIS=N   with --emit plan or --specialize: the value of a var axis\n"
    "  --specialize   the code for the --set sizes exactly (every var axis made a\n"
    "                 constant), as the runtime runs it under KBC_SPECIALIZE\n"
    "  --target T     sm_80, sm_86, sm_89, sm_90, sm_90a, or auto (the GPU's; default;\n"
    "                 without a GPU give one explicitly)\n"
    "  --precision P  fp32 (default) or tf32\n"
    "  --after PASS   with --emit ir: only after PASS (one of the passes below)\n"
    "  -o FILE        write to FILE instead of standard output\n";

static void compile_help(void) {
  kbc_buf b = {0};
  kbc_buf_puts(&b, "usage: kbc compile SPEC [--emit ");
  emit_list(&b, "|", "|");
  kbc_buf_puts(&b, "] [--target T]\n"
                   "                        [--precision P] [--after PASS] [--set AXIS=N]... [--json] [-o FILE]\n\n");
  for (int i = 0; i < N_EMIT; i++) kbc_buf_printf(&b, "  --emit %-6s  %s\n", emit_kinds[i].name, emit_kinds[i].help);
  kbc_buf_puts(&b, compile_options_help);
  kbc_buf_puts(&b, "\npasses, in order:\n");
  for (int i = 0; kbc_pass_name(i); i++) kbc_buf_printf(&b, "  %-13s  %s\n", kbc_pass_name(i), kbc_pass_help(i));
  fputs(kbc_buf_str(&b), stdout);
  kbc_buf_free(&b);
}

int cmd_check(int argc, char **argv) {
  const char *spec = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(check_help, stdout);
      return CLI_OK;
    }
    if (argv[i][0] == '-' && argv[i][1]) return cli_usage("check", "unknown option '%s'", argv[i]);
    if (spec) return cli_usage("check", "more than one spec given ('%s' and '%s')", spec, argv[i]);
    spec = argv[i];
  }
  if (!spec) return cli_usage("check", "no spec file given");
  kbc_program *p = NULL;
  if (cli_compile_spec(spec, NULL, &p) != CLI_OK) return CLI_FAIL;
  int n_in = 0, n_out = 0, n = kbc_program_num_args(p), n_stmts = kbc_program_num_statements(p);
  for (int i = 0; i < n; i++) {
    kbc_arg_info info;
    kbc_program_arg_info(p, i, &info);
    if (info.role == KBC_ROLE_INPUT) n_in++;
    else n_out++;
  }
  printf("%s: ok: kernel %s, %d input%s, %d output%s, %d statement%s\n", spec, kbc_program_name(p), n_in,
         n_in == 1 ? "" : "s", n_out, n_out == 1 ? "" : "s", n_stmts, n_stmts == 1 ? "" : "s");
  kbc_program_destroy(p);
  return CLI_OK;
}

/* Writes n bytes to path (atomically: runtime/rt_file.h) or to stdout. */
static int write_bytes(const char *path, const char *text, size_t n) {
  if (!path || !strcmp(path, "-")) {
    fwrite(text, 1, n, stdout);
    return fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
  }
  rt_err err = {0};
  int rc = rt_write_file_atomic(path, text, n, &err) ? CLI_FAIL : CLI_OK;
  if (rc != CLI_OK) cli_error("%s", rt_err_msg(&err)); /* "PATH: what failed: strerror" */
  rt_err_free(&err);
  return rc;
}

enum { MAX_SETS = 256 };

/* --emit cuda|ptx|cubin|resources|plan|plan-json: through the public API
 * (NVRTC and the cache); for a plan, the var axes from --set (the library
 * names any that are missing). */
static int emit_api(const char *spec, const char *kind, const char *target, const char *precision,
                    const char *const *sets, int n_sets, int specialize, const char *out) {
  kbc_options opt = {.target = target,
                     .precision = !strcmp(precision, "tf32") ? KBC_PRECISION_TF32 : KBC_PRECISION_FP32};
  kbc_arena *a = kbc_arena_create();
  kbc_program *p = NULL;
  char *bytes = NULL;
  size_t n = 0;
  int rc = CLI_FAIL;
  kbc_status st = kbc_compile_file(spec, &opt, &p);
  if (st == KBC_OK && specialize) st = kbc_program_set_specialize(p, 1);
  for (int i = 0; st == KBC_OK && i < n_sets; i++) {
    const char *name = NULL;
    int64_t v = 0;
    if ((rc = cli_parse_set("compile", a, sets[i], &name, &v)) != CLI_OK) goto done;
    rc = CLI_FAIL;
    if (kbc_program_bind_axis(p, name, v) != KBC_OK) {
      cli_error("--set %s: %s", sets[i], kbc_last_error());
      goto done;
    }
  }
  if (st == KBC_OK) st = kbc_program_emit(p, kind, &bytes, &n);
  if (st != KBC_OK) {
    const char *m = kbc_last_error();
    fprintf(stderr, "%s%s", st == KBC_ERROR_SPEC ? "" : "kbc: ", m);
    if (m[0] && m[strlen(m) - 1] != '\n') fputc('\n', stderr);
    rc = st == KBC_ERROR_ARGUMENT ? CLI_USAGE : CLI_FAIL;
  } else {
    rc = write_bytes(out, bytes, n);
  }
done:
  kbc_free(bytes);
  kbc_program_destroy(p);
  kbc_arena_destroy(a);
  return rc;
}

int cmd_compile(int argc, char **argv) {
  const char *spec = NULL, *emit = NULL, *after = NULL, *out = NULL, *target = "auto", *precision = "fp32";
  const char *sets[MAX_SETS];
  int n_sets = 0, json = 0, specialize = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      compile_help();
      return CLI_OK;
    }
    if (!strcmp(a, "--json")) {
      json = 1;
      continue;
    }
    if (!strcmp(a, "--specialize")) {
      specialize = 1;
      continue;
    }
    if (!strcmp(a, "--emit") || !strcmp(a, "--after") || !strcmp(a, "-o") || !strcmp(a, "--target") ||
        !strcmp(a, "--precision") || !strcmp(a, "--set")) {
      if (i + 1 >= argc) return cli_usage("compile", "%s needs a value", a);
      const char *v = argv[++i];
      if (!strcmp(a, "--emit")) emit = v;
      else if (!strcmp(a, "--after")) after = v;
      else if (!strcmp(a, "-o")) out = v;
      else if (!strcmp(a, "--target")) target = v;
      else if (!strcmp(a, "--set")) {
        if (n_sets >= MAX_SETS) return cli_usage("compile", "too many --set options");
        sets[n_sets++] = v;
      } else precision = v;
      continue;
    }
    if (a[0] == '-' && a[1]) return cli_usage("compile", "unknown option '%s'", a);
    if (spec) return cli_usage("compile", "more than one spec given ('%s' and '%s')", spec, a);
    spec = a;
  }
  if (!spec) return cli_usage("compile", "no spec file given");
  if (!emit) emit = "ir";
  cli_emit kind = emit_find(emit);
  if (kind == CLI_EMIT_NONE) {
    kbc_buf list = {0};
    emit_list(&list, ", ", " or ");
    int rc = cli_usage("compile", "--emit takes %s, not '%s'", kbc_buf_str(&list), emit);
    kbc_buf_free(&list);
    return rc;
  }
  int plan = kind == CLI_EMIT_PLAN;
  int gpu_code = plan || kind == CLI_EMIT_CUDA || kind == CLI_EMIT_PTX || kind == CLI_EMIT_CUBIN ||
                 kind == CLI_EMIT_RESOURCES;
  if (specialize && !gpu_code) return cli_usage("compile", "--specialize goes with --emit cuda, ptx, cubin, resources or plan");
  if (specialize && !n_sets) return cli_usage("compile", "--specialize needs the sizes: --set AXIS=N for every var axis");
  if (!plan && !specialize && n_sets) return cli_usage("compile", "--set goes with --emit plan (or --specialize)");
  if (!plan && json) return cli_usage("compile", "--json goes with --emit plan");
  if (strcmp(precision, "fp32") && strcmp(precision, "tf32"))
    return cli_usage("compile", "--precision takes fp32 or tf32, not '%s'", precision);
  if (after && strcmp(after, "all")) {
    int known = 0;
    for (int i = 0; !known && kbc_pass_name(i); i++) known = !strcmp(kbc_pass_name(i), after);
    if (!known) return cli_usage("compile", "--after: unknown pass '%s' (kbc compile --help lists them)", after);
  }
  if (kind != CLI_EMIT_IR && kind != CLI_EMIT_AST)
    return emit_api(spec, plan && json ? "plan-json" : emit, target, precision, sets, n_sets, specialize, out);
  char *text = NULL;
  size_t n = 0;
  int rc = CLI_FAIL;
  if (kind == CLI_EMIT_AST) {
    char *src = cli_read_spec(spec);
    if (src && kbc_ast_dump(src, spec, &text, &n) != KBC_OK) fputs(kbc_last_error(), stderr);
    free(src);
  } else {
    kbc_program *p = NULL;
    if (cli_compile_spec(spec, NULL, &p) == CLI_OK && kbc_program_ir_dump(p, after, &text, &n) != KBC_OK)
      cli_api_error();
    kbc_program_destroy(p);
  }
  if (text) rc = write_bytes(out, text, n);
  kbc_free(text);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(main_help, stderr);
    return CLI_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    fputs(main_help, stdout);
    return CLI_OK;
  }
  if (!strcmp(cmd, "--version")) {
    printf("kbc %s\n", KBC_VERSION_STRING);
    return CLI_OK;
  }
  if (!strcmp(cmd, "check")) return cmd_check(argc - 1, argv + 1);
  if (!strcmp(cmd, "compile")) return cmd_compile(argc - 1, argv + 1);
  if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
  if (!strcmp(cmd, "verify")) return cmd_verify(argc - 1, argv + 1);
  if (!strcmp(cmd, "bench")) return cmd_bench(argc - 1, argv + 1);
  if (!strcmp(cmd, "info")) return cmd_info(argc - 1, argv + 1);
  cli_error("unknown command '%s'", cmd);
  fputs("run 'kbc --help' for the list of commands\n", stderr);
  return CLI_USAGE;
}
