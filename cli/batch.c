/* batch.c — `--batch` for the GPU commands (verify, bench): one command
 * line per line of standard input, one JSON line out per line.
 *
 * Before: a command's function that runs one parsed line (its JSON line
 * on standard output when it ran).  After cli_batch: every line of
 * standard input run in one process holding the device open, so that the
 * primary context — created and destroyed by each run otherwise, ~0.2 s
 * and serialised between processes — is created once.  A line that did not
 * run (a usage error, a bad spec, no such file, an overlong line) gets
 * {"spec": S, "ok": false, "exit": N} with its messages on standard
 * error.  The exit status is the worst of the lines'. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "runtime/json.h"

enum { BATCH_MAX_LINE = 16384, BATCH_MAX_ARGS = 512 };

/* The JSON line of a run that did not happen (spec NULL: none known). */
static void report_not_run(const char *spec, int exit_status) {
  kbc_buf o = {0};
  kbc_buf_puts(&o, "{\"spec\": ");
  if (spec) rt_json_put_string(&o, cli_spec_name(spec));
  else kbc_buf_puts(&o, "null");
  kbc_buf_printf(&o, ", \"ok\": false, \"exit\": %d}\n", exit_status);
  fputs(kbc_buf_str(&o), stdout);
  kbc_buf_free(&o);
}

int cli_batch(const char *cmd, cli_batch_fn run_line) {
  rt_device *keep;
  if (cli_open_device(&keep)) return CLI_FAIL;
  char *line = malloc(BATCH_MAX_LINE);
  char **argv = malloc(sizeof *argv * (BATCH_MAX_ARGS + 1));
  int worst = CLI_OK;
  if (!line || !argv) {
    cli_error("out of host memory");
    worst = CLI_FAIL;
  }
  while (line && argv && fgets(line, BATCH_MAX_LINE, stdin)) {
    size_t len = strlen(line);
    if (len && line[len - 1] != '\n' && !feof(stdin)) {
      cli_error("--batch: a line of over %d bytes", BATCH_MAX_LINE - 2);
      for (int c; (c = getchar()) != EOF && c != '\n';) {
      }
      report_not_run(NULL, CLI_USAGE);
      fflush(stdout);
      worst = worst > CLI_USAGE ? worst : CLI_USAGE;
      continue;
    }
    int argc = 0;
    argv[argc++] = (char *)cmd;
    char *t = strtok(line, " \t\r\n");
    for (; t && argc < BATCH_MAX_ARGS; t = strtok(NULL, " \t\r\n")) argv[argc++] = t;
    argv[argc] = NULL;
    if (argc == 1 || argv[1][0] == '#') continue;
    int reported = 0, rc;
    const char *spec = NULL;
    if (t) rc = cli_usage(cmd, "--batch: a line of over %d arguments", BATCH_MAX_ARGS - 1);
    else rc = run_line(argc, argv, &spec, &reported);
    if (!reported) {
      if (rc == CLI_OK) rc = CLI_FAIL; /* --help: nothing ran */
      report_not_run(spec, rc);
    }
    fflush(stdout);
    fflush(stderr);
    if (rc > worst) worst = rc;
  }
  free(line);
  free(argv);
  rt_device_close(keep);
  return worst;
}
