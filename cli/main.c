/* main.c — the kbc command-line tool: dispatch, help, check, compile.
 * Every command reaches the compiler through the public API (kbc.h).
 *
 *   kbc [COMMON OPTIONS] COMMAND [ARGS]   (the commands in one table, `commands`)
 *   kbc check   SPEC
 *   kbc compile SPEC --emit ir|ast|cuda|ptx|cubin|resources|plan [--after PASS] [-o FILE] ...
 *   kbc run     SPEC --inputs IN --outputs OUT [--backend cpu] ...   (cmd_run.c)
 *   kbc bench, info (cmd_gpu.c), kbc verify (cmd_verify.c)
 * Options are tables read by cli_parse (cli.c); the help is made from them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kbc.h"
#include "runtime/rt_file.h"
#include "support/suggest.h"

#include "support/version.h"
#define KBC_VERSION_STRING KBC_VERSION

static const char check_help[] =
    "usage: kbc check [OPTIONS] SPEC\n"
    "\n"
    "Parses SPEC (- reads it from standard input), resolves its names, infers\n"
    "index ranges and proves every access in bounds for all values of the var\n"
    "axes.  Prints diagnostics as file:line:col: error: message (or warning:,\n"
    "note:), with the source line and a caret; warnings (an input never read,\n"
    "an axis never used) do not fail the check unless -Werror.\n";

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

enum { C_EMIT, C_JSON, C_SET, C_SPECIALIZE, C_TARGET, C_PRECISION, C_AFTER, C_OUT, C_N };
static const cli_option compile_opts[C_N] = {
    [C_EMIT] = {"emit", 0, "K", 0, "what to print (the kinds above; default ir)"},
    [C_JSON] = {"json", 0, NULL, 0,
                "with --emit plan: as JSON, {\"kernels\": [{\"name\", \"family\",\n"
                "\"statements\", \"grid\", \"block\", \"smem_bytes\", \"registers\"}],\n"
                "\"buffers\": [{\"name\", \"shape\", \"bytes\"}], \"workspace_bytes\"};\n"
                "grid and block are [x, y, z]; smem_bytes is dynamic + static;\n"
                "each buffer starts at a multiple of 256 bytes, so workspace_bytes\n"
                "is the sum of the buffers' bytes each rounded up to 256"},
    [C_SET] = {"set", 0, "AXIS=N", 1, "with --emit plan or --specialize: the value of a var axis"},
    [C_SPECIALIZE] = {"specialize", 0, NULL, 0,
                      "the code for the --set sizes exactly (every var axis made a\n"
                      "constant), as the runtime runs it under KBC_SPECIALIZE"},
    [C_TARGET] = {"target", 0, "T", 0,
                  "sm_80, sm_86, sm_89, sm_90, sm_90a, or auto (the GPU's; default;\n"
                  "without a GPU give one explicitly)"},
    [C_PRECISION] = {"precision", 0, "P", 0, "fp32 (default) or tf32"},
    [C_AFTER] = {"after", 0, "PASS", 0, "with --emit ir: only after PASS (one of the passes below)"},
    [C_OUT] = {"output", 'o', "FILE", 0, "write to FILE instead of standard output"},
};

static void compile_help(void) {
  kbc_buf b = {0}, tail = {0};
  kbc_buf_puts(&b, "usage: kbc compile [OPTIONS] SPEC [--emit ");
  emit_list(&b, "|", "|");
  kbc_buf_puts(&b, "] [--target T]\n"
                   "                        [--precision P] [--after PASS] [--set AXIS=N]... [--json] [-o FILE]\n\n");
  for (int i = 0; i < N_EMIT; i++) kbc_buf_printf(&b, "  --emit %-6s  %s\n", emit_kinds[i].name, emit_kinds[i].help);
  kbc_buf_puts(&tail, "passes, in order:\n");
  for (int i = 0; kbc_pass_name(i); i++) kbc_buf_printf(&tail, "  %-13s  %s\n", kbc_pass_name(i), kbc_pass_help(i));
  cli_help(kbc_buf_str(&b), compile_opts, C_N, kbc_buf_str(&tail));
  kbc_buf_free(&b);
  kbc_buf_free(&tail);
}

int cmd_check(int argc, char **argv) {
  const char *spec = NULL;
  char **args;
  int n_args, rc = cli_parse("check", NULL, 0, argc, argv, NULL, &args, &n_args);
  if (rc < 0) {
    cli_help(check_help, NULL, 0, NULL);
    return CLI_OK;
  }
  if (rc != CLI_OK || (rc = cli_one_spec("check", args, n_args, &spec)) != CLI_OK) return rc;
  kbc_program *p = NULL;
  if (cli_compile_spec(spec, NULL, &p) != CLI_OK) return CLI_FAIL;
  int n_in = 0, n_out = 0, n = kbc_program_num_args(p), n_stmts = kbc_program_num_statements(p);
  for (int i = 0; i < n; i++) {
    kbc_arg_info info;
    kbc_program_arg_info(p, i, &info);
    if (info.role == KBC_ROLE_INPUT) n_in++;
    else n_out++;
  }
  printf("%s: ok: kernel %s, %d input%s, %d output%s, %d statement%s\n", cli_spec_name(spec), kbc_program_name(p), n_in,
         n_in == 1 ? "" : "s", n_out, n_out == 1 ? "" : "s", n_stmts, n_stmts == 1 ? "" : "s");
  kbc_program_destroy(p);
  return CLI_OK;
}

/* Writes n bytes to path (atomically: runtime/rt_file.h) or to stdout. */
static int write_bytes(const char *path, const char *text, size_t n) {
  if (!path || !strcmp(path, "-")) {
    if (fwrite(text, 1, n, stdout) == n && fflush(stdout) == 0) return CLI_OK;
    cli_error("cannot write to standard output: %s", strerror(errno));
    return CLI_FAIL;
  }
  rt_err err = {0};
  int rc = rt_write_file_atomic(path, text, n, &err) ? CLI_FAIL : CLI_OK;
  if (rc != CLI_OK) cli_rt_error(path, rt_err_msg(&err)); /* "PATH: error: what failed: strerror" */
  rt_err_free(&err);
  return rc;
}

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
  int rc = cli_compile_spec(spec, &opt, &p);
  if (rc != CLI_OK) goto done;
  rc = CLI_FAIL;
  kbc_status st = specialize ? kbc_program_set_specialize(p, 1) : KBC_OK;
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
  cli_value v[C_N];
  char **args;
  const char *spec = NULL;
  int n_args, rc = cli_parse("compile", compile_opts, C_N, argc, argv, v, &args, &n_args);
  if (rc < 0) {
    compile_help();
    return CLI_OK;
  }
  if (rc != CLI_OK || (rc = cli_one_spec("compile", args, n_args, &spec)) != CLI_OK) return rc;
  const char *emit = v[C_EMIT].value, *after = v[C_AFTER].value, *out = v[C_OUT].value;
  const char *target = v[C_TARGET].count ? v[C_TARGET].value : "auto";
  const char *precision = v[C_PRECISION].count ? v[C_PRECISION].value : "fp32";
  const char *const *sets = v[C_SET].values;
  int n_sets = v[C_SET].count, json = v[C_JSON].count, specialize = v[C_SPECIALIZE].count;
  if (!emit) emit = "ir";
  cli_emit kind = emit_find(emit);
  if (kind == CLI_EMIT_NONE) {
    kbc_buf list = {0};
    kbc_suggest sg;
    kbc_suggest_init(&sg, emit);
    for (int i = 0; i < N_EMIT; i++) kbc_suggest_add(&sg, emit_kinds[i].name);
    emit_list(&list, ", ", " or ");
    const char *best = kbc_suggest_best(&sg);
    rc = cli_usage("compile", "--emit takes %s, not '%s'%s%s%s", kbc_buf_str(&list), emit, best ? "; did you mean '" : "",
                   best ? best : "", best ? "'?" : "");
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
    kbc_suggest sg;
    kbc_suggest_init(&sg, after);
    for (int i = 0; !known && kbc_pass_name(i); i++) {
      known = !strcmp(kbc_pass_name(i), after);
      kbc_suggest_add(&sg, kbc_pass_name(i));
    }
    const char *best = kbc_suggest_best(&sg);
    if (!known && best)
      return cli_usage("compile", "--after: unknown pass '%s'; did you mean '%s'? (kbc compile --help lists them)",
                       after, best);
    if (!known) return cli_usage("compile", "--after: unknown pass '%s' (kbc compile --help lists them)", after);
  }
  if (kind != CLI_EMIT_IR && kind != CLI_EMIT_AST)
    return emit_api(spec, plan && json ? "plan-json" : emit, target, precision, sets, n_sets, specialize, out);
  char *text = NULL;
  size_t n = 0;
  rc = CLI_FAIL;
  if (kind == CLI_EMIT_AST) {
    char *src = cli_read_spec(spec);
    if (src && kbc_ast_dump(src, cli_spec_name(spec), &text, &n) != KBC_OK) cli_print_last_diagnostics(kbc_last_error());
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

/* The commands, in the order of the help. */
static const struct {
  const char *name, *args, *help;
  int (*run)(int argc, char **argv);
} commands[] = {
    {"check", "SPEC", "parse and check a spec; print diagnostics", cmd_check},
    {"compile", "SPEC --emit K", "print the IR, the CUDA C, PTX, resources or the launch plan", cmd_compile},
    {"run", "SPEC ...", "run a spec on inputs from a safetensors, .npy, .npz file or a directory (GPU or CPU)",
     cmd_run},
    {"verify", "SPEC --set ...", "check the GPU kernels against the CPU interpreter on random inputs", cmd_verify},
    {"bench", "SPEC --set ...", "time a spec on the GPU on random inputs, with its roofline", cmd_bench},
    {"tune", "SPEC --set ...", "time code generation settings on the GPU, keep the fastest", cmd_tune},
    {"info", "", "versions, targets, driver, devices, kernel cache", cmd_info},
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

static void main_help(FILE *f) {
  fputs("usage: kbc [-q|-v] [--color=WHEN] COMMAND [ARGS]\n"
        "\n"
        "kbc compiles tensor computations written in index notation (spec files)\n"
        "into GPU kernels, and runs them on a CPU reference interpreter.\n"
        "\n"
        "commands:\n",
        f);
  for (int i = 0; i < N_COMMANDS; i++) {
    char head[40];
    snprintf(head, sizeof head, "%s %s", commands[i].name, commands[i].args);
    fprintf(f, "  %-21s  %s\n", head, commands[i].help);
  }
  fputs("\n"
        "  kbc COMMAND --help     help for one command (its options, and the common\n"
        "                         ones: -q, -v, --color, --diagnostics-format, -Werror)\n"
        "  kbc -V, --version      the version\n"
        "\n"
        "A spec given as - is read from standard input.\n"
        "exit status: 0 success, 1 error in the spec or the data, 2 usage error\n",
        f);
}

/* The options before the command: the common ones and --version. */
static const cli_option main_opts[] = {{"version", 'V', NULL, 0, "the version"}};

int main(int argc, char **argv) {
  if (argc < 2) {
    main_help(stderr);
    return CLI_USAGE;
  }
  /* Options before the command stop at it: "+" (POSIXLY_CORRECT) parsing. */
  int first = 1;
  for (; first < argc && argv[first][0] == '-' && argv[first][1] && strcmp(argv[first], "--"); first++)
    if (!strcmp(argv[first], "--color") || !strcmp(argv[first], "--diagnostics-format") || !strcmp(argv[first], "-W"))
      first++; /* its value */
  if (first > argc) first = argc;
  if (first > 1) {
    cli_value v[1];
    char **args;
    int n_args, rc = cli_parse(NULL, main_opts, 1, first, argv, v, &args, &n_args);
    if (rc < 0) {
      main_help(stdout);
      return CLI_OK;
    }
    if (rc != CLI_OK) return rc;
    if (v[0].count) {
      printf("kbc %s\n", KBC_VERSION_STRING);
      return CLI_OK;
    }
  }
  if (first < argc && !strcmp(argv[first], "--")) first++;
  if (first >= argc) {
    main_help(stderr);
    return CLI_USAGE;
  }
  const char *cmd = argv[first];
  if (!strcmp(cmd, "help")) {
    main_help(stdout);
    return CLI_OK;
  }
  kbc_suggest s;
  kbc_suggest_init(&s, cmd);
  for (int i = 0; i < N_COMMANDS; i++) {
    if (!strcmp(cmd, commands[i].name)) return commands[i].run(argc - first, argv + first);
    kbc_suggest_add(&s, commands[i].name);
  }
  const char *best = kbc_suggest_best(&s);
  if (best) cli_error("unknown command '%s'; did you mean '%s'?", cmd, best);
  else cli_error("unknown command '%s'", cmd);
  fputs("run 'kbc --help' for the list of commands\n", stderr);
  return CLI_USAGE;
}
