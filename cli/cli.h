/* cli.h — shared pieces of the kbc command-line tool.
 *
 * Exit codes: 0 success, 1 a user error (bad spec, bad input data, a
 * failed run), 2 a usage error (bad command-line arguments). */
#ifndef KBC_CLI_H
#define KBC_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "ir/bind.h"
#include "ir/ir.h"
#include "kbc.h"
#include "runtime/device.h"

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };
enum { CLI_MAX_SPEC_BYTES = 1 << 20 };

/* Prints "kbc: message" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A usage error for `cmd`: the message, then "run 'kbc CMD --help'". */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reads a spec file (at most CLI_MAX_SPEC_BYTES, no NUL bytes) into a
 * malloc'ed string; prints an error and returns NULL on failure. */
char *cli_read_spec(const char *path);
/* The spec's default kernel name: the file's base name without extension. */
const char *cli_default_name(kbc_arena *a, const char *path);

/* Compiles a spec through the IR pipeline, printing diagnostics to stderr.
 * dump/dump_after as in ir_pipeline_opts.  (bench and verify: their
 * binding and cost need the IR.) */
ir_program *cli_compile(kbc_arena *a, const char *path, kbc_buf *dump, const char *dump_after);
/* Reads a spec (cli_read_spec's messages) and compiles it through the
 * public API (kbc_compile_string), printing its diagnostics to stderr;
 * CLI_OK with *p, else CLI_FAIL (CLI_USAGE for a bad option). */
int cli_compile_spec(const char *path, const kbc_options *opt, kbc_program **p);
/* Prints kbc_last_error() to stderr as it is (diagnostics are lines of
 * their own), ending with one newline. */
void cli_api_error(void);

/* Parses a decimal int64 / double argument strictly. */
int cli_parse_i64(const char *s, int64_t *out);
int cli_parse_f64(const char *s, double *out);

/* Commands that name themselves in their messages ("kbc verify: ...")
 * set their name here; cli_error and cli_usage then use it. */
void cli_set_command(const char *cmd);

/* --set AXIS=N: the axis name (arena copy) and N >= 1.  Returns CLI_OK,
 * CLI_USAGE when arg is not AXIS=N, CLI_FAIL when N < 1 (printed). */
int cli_parse_set(const char *cmd, kbc_arena *a, const char *arg, const char **name, int64_t *value);
/* --set AXIS=N into vars[var_id] of p: as cli_parse_set, and CLI_FAIL when
 * p has no var axis of that name (a constant or derived axis is named as
 * such). */
int cli_apply_set(const char *cmd, const ir_program *p, kbc_arena *a, const char *arg, int64_t *vars);
/* CLI_OK when every var axis of p has a value (vars[i] >= 1); else prints
 * "CMD needs every var axis; missing: a, b (give --set a=N --set b=N)" and
 * returns CLI_USAGE. */
int cli_require_vars(const char *cmd, const ir_program *p, const int64_t *vars);

/* A spec compiled through the IR pipeline (diagnostics printed) and bound
 * for the --set values, every var axis required (cli_apply_set,
 * cli_require_vars; ir_bind's errors printed).  *ir and *b live in a. */
int cli_bind_spec(const char *cmd, const char *spec, const char *const *sets, int n_sets, kbc_arena *a,
                  ir_program **ir, ir_binding *b);

/* ---- the GPU commands' pieces (cmd_gpu.c) ---- */

/* Opens device 0; without one prints "no GPU available: <why>", CLI_FAIL. */
int cli_open_device(rt_device **dev);
/* kbc_compile_file for the GPU ("auto" target); errors printed. */
int cli_compile_api(const char *spec, const char *precision, kbc_program **p);
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
 * binding b of ir, p's IR): inputs filled with cli_random_uniform values;
 * with keep_host, host[i] keeps each input's values and holds room for
 * each output (else NULL).  Released by cli_dev_args_free, also after a
 * failure (which is printed). */
typedef struct {
  int n;
  kbc_arg *args;
  rt_dptr *dptr;
  float **host;
} cli_dev_args;
int cli_dev_args_random(rt_device *dev, const kbc_program *p, const ir_program *ir, const ir_binding *b,
                        cli_random *r, int keep_host, cli_dev_args *g);
void cli_dev_args_free(rt_device *dev, cli_dev_args *g);

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

int cmd_check(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_info(int argc, char **argv);
/* `kbc run --backend cuda` (cmd_gpu.c). */
int cli_run_cuda(const char *spec, const char *inputs, const char *outputs, const char *precision,
                 const char *const *sets, int n_sets);
int cmd_compile(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_verify(int argc, char **argv);

#endif
