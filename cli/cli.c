/* cli.c — helpers shared by the kbc commands; see cli.h. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/name.h"
#include "support/suggest.h"

static char *stdin_spec; /* "-": standard input, read once (bench and verify compile twice) */

const char *cli_spec_name(const char *path) { return strcmp(path, "-") ? path : "<stdin>"; }

/* At most CLI_MAX_SPEC_BYTES of text from f, malloc'ed; NULL after an error (printed). */
static char *read_text(FILE *f, const char *name) {
  char *buf = malloc(CLI_MAX_SPEC_BYTES + 1);
  if (!buf) {
    cli_error("out of memory");
    return NULL;
  }
  errno = 0;
  size_t n = fread(buf, 1, CLI_MAX_SPEC_BYTES + 1, f);
  if (ferror(f)) {
    cli_file_error(name, "cannot read: %s", strerror(errno ? errno : EIO));
    free(buf);
    return NULL;
  }
  if (n > CLI_MAX_SPEC_BYTES) {
    cli_file_error(name, "larger than %d bytes; is it really a spec?", CLI_MAX_SPEC_BYTES);
    free(buf);
    return NULL;
  }
  buf[n] = 0;
  if (memchr(buf, 0, n)) {
    cli_file_error(name, "contains a NUL byte; a spec is text");
    free(buf);
    return NULL;
  }
  return buf;
}

char *cli_read_spec(const char *path) {
  if (!strcmp(path, "-")) {
    if (!stdin_spec) stdin_spec = read_text(stdin, "<stdin>");
    char *copy = stdin_spec ? malloc(strlen(stdin_spec) + 1) : NULL;
    if (copy) strcpy(copy, stdin_spec);
    return copy;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
    cli_file_error(path, "cannot open: %s", strerror(errno));
    return NULL;
  }
  char *text = read_text(f, path);
  fclose(f);
  return text;
}

const char *cli_default_name(kbc_arena *a, const char *path) { return kbc_name_from_path(a, cli_spec_name(path)); }

int cli_compile_spec(const char *path, const kbc_options *opt, kbc_program **p) {
  *p = NULL;
  char *src = cli_read_spec(path);
  if (!src) return CLI_FAIL;
  kbc_status st = kbc_compile_string(src, cli_spec_name(path), opt, p);
  free(src);
  if (st == KBC_OK) {
    if (cli_print_last_diagnostics(kbc_program_diagnostics(*p)) == CLI_OK) return CLI_OK;
    kbc_program_destroy(*p); /* -Werror */
    *p = NULL;
    return CLI_FAIL;
  }
  if (st == KBC_ERROR_SPEC || st == KBC_ERROR_INTERNAL) {
    cli_print_last_diagnostics(kbc_last_error());
    if (!kbc_last_error()[0]) cli_file_error(cli_spec_name(path), "compilation failed");
  } else {
    cli_error("%s", kbc_last_error());
  }
  return st == KBC_ERROR_ARGUMENT ? CLI_USAGE : CLI_FAIL;
}

int cli_parse_i64(const char *s, int64_t *out) {
  if (!s || !*s) return 0;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || *end) return 0;
  *out = v;
  return 1;
}

int cli_parse_f64(const char *s, double *out) {
  if (!s || !*s) return 0;
  errno = 0;
  char *end;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v)) return 0;
  *out = v;
  return 1;
}

int cli_parse_set(const char *cmd, kbc_arena *a, const char *arg, const char **name, int64_t *value) {
  const char *eq = strchr(arg, '=');
  if (!eq || eq == arg || !cli_parse_i64(eq + 1, value))
    return cli_usage(cmd, "--set takes AXIS=N, not '%s'", arg);
  if (*value < 1) {
    cli_error("--set %s: axis sizes must be positive", arg);
    return CLI_FAIL;
  }
  *name = kbc_arena_strndup(a, arg, (size_t)(eq - arg));
  return CLI_OK;
}

/* --set AXIS=N for p: as cli_parse_set, and CLI_FAIL when p has no var
 * axis of that name (a constant or derived axis is named as such). */
static int apply_set(const char *cmd, kbc_program *p, kbc_arena *a, const char *arg) {
  const char *name = NULL;
  int64_t n = 0;
  int rc = cli_parse_set(cmd, a, arg, &name, &n);
  if (rc != CLI_OK) return rc;
  if (kbc_program_bind_axis(p, name, n) != KBC_OK) {
    cli_error("--set %s: %s", arg, kbc_last_error());
    return CLI_FAIL;
  }
  return CLI_OK;
}

/* CLI_OK when every var axis of p has a value; else the usage error
 * naming the missing ones. */
static int require_vars(const char *cmd, const kbc_program *p) {
  kbc_buf names = {0}, give = {0};
  for (int i = 0; i < kbc_program_num_var_axes(p); i++) {
    const char *name;
    int64_t v;
    if (kbc_program_var_axis(p, i, &name, &v) == KBC_OK && v < 1) {
      kbc_buf_printf(&names, "%s%s", names.len ? ", " : "", name);
      kbc_buf_printf(&give, "%s--set %s=N", give.len ? " " : "", name);
    }
  }
  int rc = CLI_OK;
  if (names.len)
    rc = cli_usage(cmd, "%s needs every var axis; missing: %s (give %s)", cmd, kbc_buf_str(&names),
                   kbc_buf_str(&give));
  kbc_buf_free(&names);
  kbc_buf_free(&give);
  return rc;
}

int cli_bind_spec(const char *cmd, const char *spec, const char *precision, const char *const *sets, int n_sets,
                  kbc_program **p, kbc_binding_info *info) {
  return cli_bind_spec_with(cmd, spec, precision, NULL, NULL, sets, n_sets, p, info);
}

int cli_bind_spec_with(const char *cmd, const char *spec, const char *precision, const char *target,
                       const char *config, const char *const *sets, int n_sets, kbc_program **p,
                       kbc_binding_info *info) {
  *p = NULL;
  if (cli_compile_api_with(spec, precision, target, config, p) != CLI_OK) return CLI_FAIL;
  kbc_arena *a = kbc_arena_create();
  int rc = CLI_OK;
  for (int i = 0; i < n_sets && rc == CLI_OK; i++) rc = apply_set(cmd, *p, a, sets[i]);
  kbc_arena_destroy(a);
  if (rc == CLI_OK) rc = require_vars(cmd, *p);
  if (rc == CLI_OK && kbc_program_binding(*p, info) != KBC_OK) {
    cli_api_error(); /* the binding's diagnostics (spec locations), as they are */
    rc = CLI_FAIL;
  }
  if (rc != CLI_OK) {
    kbc_program_destroy(*p);
    *p = NULL;
  }
  return rc;
}

/* ---- options ---------------------------------------------------------------
 * Every command's options are a table (cli_option); getopt_long parses
 * them (--opt=V and --opt V, unique prefixes of long names, -- ends the
 * options, - is an argument), and the help lists them from the same table.
 * The options every command takes (cli_common_options) come after the
 * command's own. */

const cli_option cli_common_options[CLI_N_COMMON] = {
    {"help", 'h', NULL, 0, "this help"},
    {"quiet", 'q', NULL, 0, "no informational lines (warnings and errors stay)"},
    {"verbose", 'v', NULL, 0, "more informational lines"},
    {"color", 0, "WHEN", 0, "colour in messages: auto (default: when standard error\nis a terminal), always or never"},
    {"diagnostics-format", 0, "F", 0, "text (default) or json: the spec's diagnostics as one JSON\nobject a line, {\"file\", \"line\", \"column\", \"kind\", \"message\"}"},
    {"Werror", 'W', "error", 0, "warnings are errors (exit status 1)"},
};

/* The display of an option: "-o, --outputs FILE" or "--json". */
static void option_label(kbc_buf *b, const cli_option *o) {
  if (o->short_name == 'W') {
    kbc_buf_puts(b, "-Werror");
    return;
  }
  if (o->short_name) kbc_buf_printf(b, "-%c, ", o->short_name);
  kbc_buf_printf(b, "--%s", o->name);
  if (o->metavar) kbc_buf_printf(b, " %s", o->metavar);
}

static void help_lines(kbc_buf *b, const cli_option *opts, int n) {
  for (int i = 0; i < n; i++) {
    kbc_buf label = {0};
    option_label(&label, &opts[i]);
    kbc_buf_printf(b, "  %-22s", kbc_buf_str(&label));
    if (label.len > 22) kbc_buf_printf(b, "\n  %-22s", "");
    kbc_buf_free(&label);
    for (const char *h = opts[i].help; *h;) {
      const char *nl = strchr(h, '\n');
      size_t len = nl ? (size_t)(nl - h) : strlen(h);
      kbc_buf_printf(b, "  %.*s\n", (int)len, h);
      if (!nl) break;
      h = nl + 1;
      kbc_buf_printf(b, "  %-22s", "");
    }
  }
}

void cli_help(const char *head, const cli_option *opts, int n, const char *tail) {
  kbc_buf b = {0};
  kbc_buf_puts(&b, head);
  if (n) kbc_buf_puts(&b, "\noptions:\n");
  help_lines(&b, opts, n);
  kbc_buf_puts(&b, "\ncommon options:\n");
  help_lines(&b, cli_common_options, CLI_N_COMMON);
  if (tail) kbc_buf_printf(&b, "\n%s", tail);
  fputs(kbc_buf_str(&b), stdout);
  kbc_buf_free(&b);
}

/* The option at index i of the command's table followed by the common ones. */
static const cli_option *opt_at(const cli_option *opts, int n, int i) {
  return i < n ? &opts[i] : &cli_common_options[i - n];
}

/* An unknown option: its name, and the closest known one. */
static int unknown_option(const char *cmd, const cli_option *opts, int n, const char *arg) {
  char word[64];
  snprintf(word, sizeof word, "%.*s", (int)strcspn(arg, "="), arg);
  if (!strncmp(word, "--", 2)) {
    int matches = 0;
    for (int i = 0; i < n + CLI_N_COMMON; i++) matches += !strncmp(opt_at(opts, n, i)->name, word + 2, strlen(word + 2));
    if (matches > 1) return cli_usage(cmd, "option '%s' is ambiguous (a prefix of %d options)", word, matches);
  }
  kbc_suggest s;
  kbc_suggest_init(&s, word);
  char names[CLI_MAX_OPTIONS][48];
  for (int i = 0; i < n + CLI_N_COMMON && i < CLI_MAX_OPTIONS; i++) {
    const cli_option *o = opt_at(opts, n, i);
    snprintf(names[i], sizeof names[i], o->short_name == 'W' ? "-Werror" : "--%s", o->name);
    kbc_suggest_add(&s, names[i]);
  }
  const char *best = kbc_suggest_best(&s);
  if (best) return cli_usage(cmd, "unknown option '%s'; did you mean '%s'?", word, best);
  return cli_usage(cmd, "unknown option '%s'", word);
}

/* A common option's effect; CLI_OK or a usage error. */
static int common_option(const char *cmd, const char *name, const char *v) {
  if (!strcmp(name, "quiet")) cli_set_verbosity(0);
  else if (!strcmp(name, "verbose")) cli_set_verbosity(2);
  else if (!strcmp(name, "color")) {
    if (!strcmp(v, "auto")) cli_set_color(-1);
    else if (!strcmp(v, "always")) cli_set_color(1);
    else if (!strcmp(v, "never")) cli_set_color(0);
    else return cli_usage(cmd, "--color takes auto, always or never, not '%s'", v);
  } else if (!strcmp(name, "diagnostics-format")) {
    if (strcmp(v, "text") && strcmp(v, "json"))
      return cli_usage(cmd, "--diagnostics-format takes text or json, not '%s'", v);
    cli_set_diagnostics_json(!strcmp(v, "json"));
  } else if (!strcmp(name, "Werror")) {
    if (strcmp(v, "error")) return cli_usage(cmd, "-W takes 'error' (-Werror), not '%s'", v);
    cli_set_werror(1);
  }
  return CLI_OK;
}

/* One option's value into vals[i] (a repeated single-valued one is an error). */
static int take(const char *cmd, const cli_option *o, cli_value *val, const char *v) {
  if (val->count && !o->many) {
    if (!o->metavar) return CLI_OK; /* a flag given twice says the same */
    return cli_usage(cmd, "--%s is given twice ('%s' and '%s'); give it once", o->name, val->value, v);
  }
  if (val->count >= CLI_MAX_VALUES) return cli_usage(cmd, "too many --%s options", o->name);
  val->values[val->count++] = v;
  val->value = v;
  return CLI_OK;
}

int cli_parse(const char *cmd, const cli_option *opts, int n, int argc, char **argv, cli_value *vals,
              char ***args, int *n_args) {
  struct option lo[CLI_MAX_OPTIONS + 1];
  char shorts[3 * CLI_MAX_OPTIONS + 2] = ":";
  int total = n + CLI_N_COMMON, ns = 1;
  if (total > CLI_MAX_OPTIONS) return cli_usage(cmd, "too many options in the table (a bug in kbc)");
  for (int i = 0; i < total; i++) {
    const cli_option *o = opt_at(opts, n, i);
    lo[i] = (struct option){o->name, o->metavar ? required_argument : no_argument, NULL, 256 + i};
    if (o->short_name) {
      shorts[ns++] = (char)o->short_name;
      if (o->metavar) shorts[ns++] = ':';
    }
  }
  lo[total] = (struct option){0};
  shorts[ns] = 0;
  if (n) memset(vals, 0, sizeof *vals * (size_t)n);
  opterr = 0;
  optind = 0; /* glibc: start afresh (main may have parsed before) */
  for (int c; (c = getopt_long(argc, argv, shorts, lo, NULL)) != -1;) {
    int i = c >= 256 ? c - 256 : -1;
    for (int k = 0; i < 0 && k < total; k++)
      if (c != '?' && c != ':' && opt_at(opts, n, k)->short_name == c) i = k;
    if (c == '?' || c == ':') {
      int which = optopt >= 256 ? optopt - 256 : -1;
      for (int k = 0; which < 0 && optopt && k < total; k++)
        if (opt_at(opts, n, k)->short_name == optopt) which = k;
      if (which >= 0) {
        const cli_option *o = opt_at(opts, n, which);
        if (c == ':') return cli_usage(cmd, "--%s needs a value (%s)", o->name, o->metavar);
        return cli_usage(cmd, "--%s takes no value", o->name);
      }
      char arg[8];
      snprintf(arg, sizeof arg, "-%c", optopt);
      return unknown_option(cmd, opts, n, optopt ? arg : argv[optind - 1]);
    }
    const cli_option *o = opt_at(opts, n, i);
    if (i >= n) {
      if (!strcmp(o->name, "help")) return -1;
      int rc = common_option(cmd, o->name, optarg);
      if (rc != CLI_OK) return rc;
      continue;
    }
    int rc = take(cmd, o, &vals[i], o->metavar ? optarg : "");
    if (rc != CLI_OK) return rc;
  }
  *args = argv + optind;
  *n_args = argc - optind;
  return CLI_OK;
}

int cli_one_spec(const char *cmd, char **args, int n_args, const char **spec) {
  if (n_args == 0) return cli_usage(cmd, "no spec file given");
  if (n_args > 1) return cli_usage(cmd, "more than one spec given ('%s' and '%s')", args[0], args[1]);
  *spec = args[0];
  return CLI_OK;
}
