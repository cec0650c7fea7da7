/* cli.h — shared pieces of the kbc command-line tool.
 *
 * Exit codes: 0 success, 1 a user error (bad spec, bad input data, a
 * failed run), 2 a usage error (bad command-line arguments). */
#ifndef KBC_CLI_H
#define KBC_CLI_H

#include <stdint.h>

#include "ir/ir.h"

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
 * dump/dump_after as in ir_pipeline_opts. */
ir_program *cli_compile(kbc_arena *a, const char *path, kbc_buf *dump, const char *dump_after);

/* Parses a decimal int64 / double argument strictly. */
int cli_parse_i64(const char *s, int64_t *out);
int cli_parse_f64(const char *s, double *out);

int cmd_check(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_info(int argc, char **argv);
/* `kbc run --backend cuda` (cmd_gpu.c). */
int cli_run_cuda(const char *spec, const char *inputs, const char *outputs, const char *precision,
                 const char *const *sets, int n_sets);
int cmd_compile(int argc, char **argv);
int cmd_run(int argc, char **argv);

#endif
