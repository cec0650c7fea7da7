/* cli.h — shared pieces of the kbc command-line tool: options (cli.c),
 * messages (report.c), specs, and the GPU commands' pieces (cmd_gpu.c).
 *
 * Exit codes: 0 success, 1 a user error (bad spec, bad input data, a
 * failed run, a warning under -Werror), 2 a usage error (bad command-line
 * arguments). */
#ifndef KBC_CLI_H
#define KBC_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "kbc.h"
#include "support/arena.h"
#include "runtime/device.h"
#include "runtime/safetensors.h"

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };
enum { CLI_MAX_SPEC_BYTES = 1 << 20 };

/* ---- messages (report.c; the rule is at the top of that file) ---- */

/* "kbc: message" (or "kbc CMD: message" after cli_set_command). */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "kbc: warning: message". */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An informational line, "kbc: message", unless -q. */
void cli_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "FILE: error: message": something wrong with a file or its contents. */
void cli_file_error(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A runtime message "FILE: problem" (rt_err, safetensors, rt_file) as
 * "FILE: error: problem" when it starts with file, else as cli_error. */
void cli_rt_error(const char *file, const char *msg);
/* A usage error for `cmd` (NULL: none): the message, then "run 'kbc CMD
 * --help' for usage"; returns CLI_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints kbc_last_error() to stderr as it is (diagnostics are lines of
 * their own), ending with one newline. */
void cli_api_error(void);
/* Commands that name themselves in their messages ("kbc verify: ...")
 * set their name here; cli_error and cli_usage then use it. */
void cli_set_command(const char *cmd);
/* The common options' settings: verbosity (0 -q, 1 default, 2 -v), colour
 * (-1 auto, 0 never, 1 always), JSON diagnostics, -Werror. */
void cli_set_verbosity(int v);
int cli_verbosity(void);
void cli_set_color(int on);
void cli_set_diagnostics_json(int on);
void cli_set_werror(int on);
/* A compilation's diagnostics: text (the library's rendering) unless
 * colour, JSON or -Werror with a warning call for the records.  Returns
 * CLI_FAIL when -Werror and a warning was among them, else CLI_OK. */
int cli_print_diagnostics(const kbc_diagnostic *r, int n, const char *text);
/* The same for the last compile call's (kbc_last_diagnostic). */
int cli_print_last_diagnostics(const char *text);

/* ---- options (cli.c) ----
 * A command's options as a table; cli_parse reads them with getopt_long
 * (--opt=V or --opt V, unique prefixes of long names; -- ends the options;
 * a lone - is an argument), with the common options (-h, -q, -v, --color,
 * --diagnostics-format, -Werror) after the table's.  A single-valued option
 * given twice is a usage error; a misspelt one gets "did you mean". */
typedef struct {
  const char *name;    /* the long name, without "--" */
  int short_name;      /* a letter, or 0 */
  const char *metavar; /* the value's name in the help; NULL: a flag */
  int many;            /* may be given more than once (--set) */
  const char *help;    /* lines separated by '\n' (indented in the help) */
} cli_option;

enum { CLI_MAX_OPTIONS = 32, CLI_MAX_VALUES = 256, CLI_N_COMMON = 6 };

typedef struct {
  int count;          /* times given (a flag: 0 or 1) */
  const char *value;  /* the last value ("" for a flag) */
  const char *values[CLI_MAX_VALUES];
} cli_value;

extern const cli_option cli_common_options[CLI_N_COMMON];

/* Parses argv[1..] (argv[0] is the command) into vals[i] for opts[i] and
 * the arguments that are not options (*args, *n_args, in order).  Returns
 * CLI_OK, -1 for --help (the caller prints it), or CLI_USAGE (printed). */
int cli_parse(const char *cmd, const cli_option *opts, int n, int argc, char **argv, cli_value *vals,
              char ***args, int *n_args);
/* Exactly one spec among the arguments; else a usage error. */
int cli_one_spec(const char *cmd, char **args, int n_args, const char **spec);
/* Prints head, the table's options, the common options, then tail (may be
 * NULL) to standard output. */
void cli_help(const char *head, const cli_option *opts, int n, const char *tail);

/* Reads a spec file (at most CLI_MAX_SPEC_BYTES, no NUL bytes; "-" is
 * standard input, read once and kept) into a malloc'ed string; prints an
 * error (with strerror) and returns NULL on failure. */
char *cli_read_spec(const char *path);
/* The spec's name in messages: path, or "<stdin>" for "-". */
const char *cli_spec_name(const char *path);
/* The spec's default kernel name: the file's base name without extension. */
const char *cli_default_name(kbc_arena *a, const char *path);

/* Reads a spec (cli_read_spec's messages) and compiles it through the
 * public API (kbc_compile_string), printing its diagnostics to stderr;
 * CLI_OK with *p, else CLI_FAIL (CLI_USAGE for a bad option). */
int cli_compile_spec(const char *path, const kbc_options *opt, kbc_program **p);
/* Parses a decimal int64 / double argument strictly. */
int cli_parse_i64(const char *s, int64_t *out);
int cli_parse_f64(const char *s, double *out);

/* --set AXIS=N: the axis name (arena copy) and N >= 1.  Returns CLI_OK,
 * CLI_USAGE when arg is not AXIS=N, CLI_FAIL when N < 1 (printed). */
int cli_parse_set(const char *cmd, kbc_arena *a, const char *arg, const char **name, int64_t *value);
/* A spec compiled through the public API for the GPU at precision
 * (diagnostics printed) and its var axes preset from the --set values,
 * every one required: "CMD needs every var axis; missing: a, b (give --set
 * a=N --set b=N)" (CLI_USAGE); the binding checked (kbc_program_binding:
 * its errors printed) into *info.  CLI_OK with *p, else *p NULL. */
int cli_bind_spec(const char *cmd, const char *spec, const char *precision, const char *const *sets, int n_sets,
                  kbc_program **p, kbc_binding_info *info);
/* The same compiled with cli_compile_api_with's target and config. */
int cli_bind_spec_with(const char *cmd, const char *spec, const char *precision, const char *target,
                       const char *config, const char *const *sets, int n_sets, kbc_program **p,
                       kbc_binding_info *info);

/* ---- the GPU commands' pieces (cmd_gpu.c) ---- */

/* Opens device 0; without one prints "no GPU available: <why>", CLI_FAIL. */
int cli_open_device(rt_device **dev);
/* The relative L2 error a result at precision ("fp32" or "tf32") may have
 * against the truth: 1e-5, or 2e-3 at tf32 (include/kbc.h). */
double cli_tolerance(const char *precision);
/* kbc_compile_file for the GPU ("auto" target); errors printed. */
int cli_compile_api(const char *spec, const char *precision, kbc_program **p);
/* The same for target (NULL: "auto") with kbc_options.config (may be NULL). */
int cli_compile_api_with(const char *spec, const char *precision, const char *target, const char *config,
                         kbc_program **p);
/* Uniform values in [lo, hi) from a 64-bit LCG whose state advances;
 * cli_random_start(seed, lo, hi) starts it (bench's inputs are seed 0's
 * in [-1, 1)). */
typedef struct {
  uint64_t state;
  double lo, hi;
} cli_random;
cli_random cli_random_start(uint64_t seed, double lo, double hi);
void cli_random_uniform(float *h, size_t n, cli_random *r);

/* Device memory for every argument of p (inputs then outputs, shaped by
 * its preset binding, kbc_program_arg_shape): inputs filled with
 * cli_random_uniform values (without keep_host, an input of more than
 * CLI_RANDOM_CHUNK elements gets that many values repeated: timing needs
 * no more); with keep_host, host[i] keeps each input's values and holds
 * room for each output (else NULL); numel[i] each one's elements.
 * Released by cli_dev_args_free, also after a failure (which is printed). */
enum { CLI_RANDOM_CHUNK = 1 << 22 };
typedef struct {
  int n;
  kbc_arg *args;
  rt_dptr *dptr;
  float **host;
  int64_t (*shape)[KBC_MAX_RANK];
  int64_t *numel;
} cli_dev_args;
int cli_dev_args_random(rt_device *dev, kbc_program *p, cli_random *r, int keep_host, cli_dev_args *g);
void cli_dev_args_free(rt_device *dev, cli_dev_args *g);

/* Times p on argument sets (n_sets of them, n arguments each, taken in
 * turn launch by launch): 3 launches to warm up, then iters samples of
 * repeat launches back to back each (CUDA events around each sample, over
 * repeat); the median and the fastest sample in us (min_us may be NULL).
 * CLI_OK, else CLI_FAIL (printed). */
int cli_time_launches(rt_device *dev, kbc_program *p, const kbc_arg *const *sets, int n_sets, int n, int64_t iters,
                      int64_t repeat, double *median_us, double *min_us);

/* What bench and verify hold while they run; cli_gpu_session_close
 * releases all of it (the arguments' device memory before the device),
 * whatever was reached, and zeroes it. */
typedef struct {
  kbc_arena *ar;
  rt_device *dev;
  kbc_program *p;
  cli_dev_args g;
  rt_err err;
} cli_gpu_session;
void cli_gpu_session_close(cli_gpu_session *s);

/* ---- --batch (batch.c) ----
 * Runs run_line on each line of standard input split at blanks (argv[0]
 * is cmd; empty lines and lines starting with '#' skipped) with the
 * device held open throughout.  run_line returns the line's exit status,
 * sets *spec to its spec once known and *reported once its JSON line is
 * out; a line not reported gets {"spec", "ok": false, "exit": N}.
 * Returns the worst exit status (CLI_FAIL without a GPU). */
typedef int (*cli_batch_fn)(int argc, char **argv, const char **spec, int *reported);
int cli_batch(const char *cmd, cli_batch_fn run_line);

int cmd_check(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_tune(int argc, char **argv);
/* `kbc run --backend cuda` (cmd_gpu.c). */
int cli_run_cuda(const char *spec, const char *inputs, const char *outputs, const char *precision, int cast,
                 const char *const *sets, int n_sets);
/* `kbc run`'s inputs (any format of runtime/tensor_io.h), every tensor f32:
 * with cast, F64, F16 and BF16 ones converted, else any other dtype is an
 * error naming the tensor (printed).  CLI_OK with *in, else CLI_FAIL. */
int cli_load_inputs(const char *path, int cast, rt_st_file **in);
/* A .npy outputs path for a spec of more than one output: a usage error
 * (printed, CLI_USAGE) before anything runs; else CLI_OK. */
int cli_check_outputs_path(const kbc_program *p, const char *outputs);
int cmd_compile(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_verify(int argc, char **argv);

#endif
