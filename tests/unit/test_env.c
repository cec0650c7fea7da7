/* test_env.c — support/env.c, the one rule for kbc's environment switches,
 * and codegen's cg_options_from_env built on it: the boolean spellings
 * (1/yes/on/true, 0/no/off/false, any letter case), strict decimal
 * integers within a range, unset and empty as the default, an invalid
 * value as the default with one warning on stderr per variable and value,
 * and every code generation switch read into its cg_options field. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/options.h"
#include "support/env.h"

static const char *const cg_vars[] = {"KBC_NO_GEMM",    "KBC_NO_FUSE",    "KBC_MAX_TEAM",        "KBC_UNROLL",
                                      "KBC_FP32_MMA",   "KBC_ROWS_PARTS", "KBC_GEMM_MIN_BLOCKS", "KBC_IDX32",
                                      "KBC_NO_VEC",     "KBC_GEMM_STAGES", "KBC_ATTN_RECOMPUTE", "KBC_ROWS_WELFORD",
                                      "KBC_ROWS_ONLINE", "KBC_ATTN_PIPE", "KBC_GEMM_ALWAYS", "KBC_GEMM_FOLD",
                                      "KBC_GEMM_KTAB",  "KBC_GEMM_WIN",   "KBC_GEMM_WIN_PIPE", "KBC_GEMM_WIN_RING", "KBC_GEMM_TAIL"};

static void clear_cg_vars(void) {
  for (size_t i = 0; i < sizeof cg_vars / sizeof cg_vars[0]; i++) unsetenv(cg_vars[i]);
}

/* What f(name) writes to stderr, captured through a temporary file. */
static char *stderr_of(void (*f)(const char *), const char *name) {
  char path[] = "/tmp/kbc_test_env_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  f(name);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  static char text[1024];
  ssize_t n = pread(fd, text, sizeof text - 1, 0);
  text[n > 0 ? n : 0] = 0;
  close(fd);
  unlink(path);
  return text;
}

static void test_parse_flag(void **state) {
  (void)state;
  const char *on[] = {"1", "yes", "on", "true", "YES", "On", "TRUE"};
  const char *off[] = {"0", "no", "off", "false", "NO", "Off", "False"};
  const char *bad[] = {"", "2", "-1", "01", " 1", "1 ", "y", "n", "enable", "yess", "truee"};
  int v;
  for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
    v = -1;
    assert_int_equal(kbc_parse_flag(on[i], &v), 1);
    assert_int_equal(v, 1);
  }
  for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
    v = -1;
    assert_int_equal(kbc_parse_flag(off[i], &v), 1);
    assert_int_equal(v, 0);
  }
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    v = -1;
    assert_int_equal(kbc_parse_flag(bad[i], &v), 0);
    assert_int_equal(v, -1); /* untouched */
  }
  assert_int_equal(kbc_parse_flag(NULL, &v), 0);
}

static void test_parse_int(void **state) {
  (void)state;
  long long v = -7;
  assert_int_equal(kbc_parse_int("4", 1, 64, &v), 1);
  assert_int_equal(v, 4);
  assert_int_equal(kbc_parse_int("+64", 1, 64, &v), 1);
  assert_int_equal(v, 64);
  assert_int_equal(kbc_parse_int("-3", -5, 5, &v), 1);
  assert_int_equal(v, -3);
  assert_int_equal(kbc_parse_int("007", 0, 10, &v), 1);
  assert_int_equal(v, 7);
  v = -7;
  const char *bad[] = {"", "0", "65", "abc", "8x", " 8", "8 ", "+", "-", "1.5", "0x10", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_int_equal(kbc_parse_int(bad[i], 1, 64, &v), 0);
  assert_int_equal(v, -7); /* untouched */
  assert_int_equal(kbc_parse_int(NULL, 1, 64, &v), 0);
}

static void test_env_flag(void **state) {
  (void)state;
  unsetenv("KBC_TEST_FLAG");
  assert_int_equal(kbc_env_flag("KBC_TEST_FLAG", 0), 0);
  assert_int_equal(kbc_env_flag("KBC_TEST_FLAG", 1), 1);
  setenv("KBC_TEST_FLAG", "", 1); /* empty: unset */
  assert_int_equal(kbc_env_flag("KBC_TEST_FLAG", 1), 1);
  setenv("KBC_TEST_FLAG", "on", 1);
  assert_int_equal(kbc_env_flag("KBC_TEST_FLAG", 0), 1);
  setenv("KBC_TEST_FLAG", "false", 1);
  assert_int_equal(kbc_env_flag("KBC_TEST_FLAG", 1), 0);
  unsetenv("KBC_TEST_FLAG");
}

static void test_env_int(void **state) {
  (void)state;
  unsetenv("KBC_TEST_INT");
  assert_int_equal(kbc_env_int("KBC_TEST_INT", 1, 64, 4), 4);
  setenv("KBC_TEST_INT", "", 1);
  assert_int_equal(kbc_env_int("KBC_TEST_INT", 1, 64, 4), 4);
  setenv("KBC_TEST_INT", "2", 1);
  assert_int_equal(kbc_env_int("KBC_TEST_INT", 1, 64, 4), 2);
  setenv("KBC_TEST_INT", "2147483647", 1);
  assert_int_equal(kbc_env_int("KBC_TEST_INT", 0, INT_MAX, 0), INT_MAX);
  unsetenv("KBC_TEST_INT");
}

static void test_env_str(void **state) {
  (void)state;
  unsetenv("KBC_TEST_STR");
  assert_null(kbc_env_str("KBC_TEST_STR"));
  setenv("KBC_TEST_STR", "", 1);
  assert_null(kbc_env_str("KBC_TEST_STR"));
  setenv("KBC_TEST_STR", "/tmp/x", 1);
  assert_string_equal(kbc_env_str("KBC_TEST_STR"), "/tmp/x");
  unsetenv("KBC_TEST_STR");
}

static void read_flag(const char *name) { assert_int_equal(kbc_env_flag(name, 0), 0); }
static void read_int(const char *name) { assert_int_equal(kbc_env_int(name, 1, 64, 4), 4); }

/* An invalid value: the default, and a warning naming the variable, its
 * value and what is wanted, once per variable and value. */
static void test_invalid_warns_once(void **state) {
  (void)state;
  setenv("KBC_TEST_WARN_FLAG", "2", 1);
  const char *w = stderr_of(read_flag, "KBC_TEST_WARN_FLAG");
  assert_non_null(strstr(w, "kbc: warning: ignoring KBC_TEST_WARN_FLAG='2'"));
  assert_non_null(strstr(w, "1, yes, on, true or 0, no, off, false"));
  assert_string_equal(stderr_of(read_flag, "KBC_TEST_WARN_FLAG"), "");
  setenv("KBC_TEST_WARN_FLAG", "enable", 1); /* another value: warned again */
  assert_non_null(strstr(stderr_of(read_flag, "KBC_TEST_WARN_FLAG"), "'enable'"));
  unsetenv("KBC_TEST_WARN_FLAG");

  setenv("KBC_TEST_WARN_INT", "65", 1);
  w = stderr_of(read_int, "KBC_TEST_WARN_INT");
  assert_non_null(strstr(w, "ignoring KBC_TEST_WARN_INT='65' (want an integer in 1..64); using the default, 4"));
  assert_string_equal(stderr_of(read_int, "KBC_TEST_WARN_INT"), "");
  setenv("KBC_TEST_WARN_INT", "7", 1); /* a valid value: no warning */
  assert_int_equal(kbc_env_int("KBC_TEST_WARN_INT", 1, 64, 4), 7);
  unsetenv("KBC_TEST_WARN_INT");
}

/* cg_options_from_env: nothing set is cg_options_default. */
static void test_cg_options_defaults(void **state) {
  (void)state;
  clear_cg_vars();
  cg_options d = cg_options_default(), e = cg_options_from_env();
  assert_memory_equal(&d, &e, sizeof d);
  assert_int_equal(d.unroll, CG_UNROLL_DEFAULT);
  assert_int_equal(d.max_team, 0);
  assert_int_equal(d.gemm_min_blocks, 0);
  assert_int_equal(d.no_gemm + d.no_fuse + d.rows_parts + d.gemm_stages + d.attn_recompute, 0);
  assert_int_equal(d.idx32 + d.rows_welford + d.attn_pipe, 3); /* on by default */
  assert_int_equal(d.fp32_mma, -1); /* unset: each family's choice */
}

/* Every switch into its field, by the one rule. */
static void test_cg_options_from_env(void **state) {
  (void)state;
  clear_cg_vars();
  setenv("KBC_NO_GEMM", "1", 1);
  setenv("KBC_NO_FUSE", "yes", 1);
  setenv("KBC_MAX_TEAM", "32", 1);
  setenv("KBC_UNROLL", "2", 1);
  setenv("KBC_FP32_MMA", "on", 1);
  setenv("KBC_ROWS_PARTS", "TRUE", 1);
  setenv("KBC_GEMM_MIN_BLOCKS", "3", 1);
  setenv("KBC_IDX32", "1", 1);
  setenv("KBC_GEMM_STAGES", "3", 1);
  cg_options o = cg_options_from_env();
  assert_true(o.no_gemm && o.no_fuse && o.rows_parts && o.idx32);
  assert_int_equal(o.fp32_mma, 1);
  assert_int_equal(o.gemm_stages, 3);
  assert_int_equal(o.max_team, 32);
  assert_int_equal(o.unroll, 2);
  assert_int_equal(o.gemm_min_blocks, 3);

  setenv("KBC_NO_GEMM", "off", 1); /* once "on" (anything but "0"), now off */
  setenv("KBC_IDX32", "0", 1);
  setenv("KBC_GEMM_MIN_BLOCKS", "1", 1); /* 1: no bound (0: the plan's) */
  setenv("KBC_FP32_MMA", "0", 1);       /* 0: FFMA everywhere */
  o = cg_options_from_env();
  assert_int_equal(o.fp32_mma, 0);
  assert_int_equal(o.no_gemm, 0);
  assert_int_equal(o.idx32, 0);
  assert_int_equal(o.gemm_min_blocks, 1);
  clear_cg_vars();
}

/* cg_options_apply: settings text ("KBC_X=V", spaces or commas between)
 * into the fields by the same rule; what cg_options_describe writes reads
 * back as the same options; errors leave a message. */
static void test_cg_options_apply(void **state) {
  (void)state;
  cg_options o = cg_options_default();
  kbc_buf err = {0};
  assert_int_equal(cg_options_apply(&o, "KBC_GEMM_STAGES=3, KBC_NO_VEC=yes  KBC_GEMM_TAIL=0,KBC_FP32_MMA=0", &err), 0);
  assert_int_equal(o.gemm_stages, 3);
  assert_int_equal(o.no_vec, 1);
  assert_int_equal(o.gemm_tail, 0);
  assert_int_equal(o.fp32_mma, 0);
  kbc_buf text = {0};
  cg_options_describe(&o, &text);
  cg_options back = cg_options_default();
  assert_int_equal(cg_options_apply(&back, kbc_buf_str(&text) + 2, &err), 0); /* less the leading ", " */
  assert_memory_equal(&o, &back, sizeof o);
  assert_int_equal(cg_options_apply(&back, "", &err), 0);
  assert_int_equal(cg_options_apply(&back, NULL, &err), 0);
  static const char *const bad[][2] = {{"KBC_GEMM_STAGES=5", "KBC_GEMM_STAGES takes a number from 0 to 4, not '5'"},
                                       {"KBC_NO_VEC=2", "KBC_NO_VEC takes 0 or 1, not '2'"},
                                       {"KBC_NO_VEC", "expected NAME=VALUE at 'KBC_NO_VEC'"},
                                       {"=1", "expected NAME=VALUE"},
                                       {"KBC_NOPE=1", "unknown switch 'KBC_NOPE'"},
                                       {"KBC_ATTN_RECOMPUTE=1", "from the environment only"}};
  for (int i = 0; i < 6; i++) {
    kbc_buf e = {0};
    assert_int_equal(cg_options_apply(&back, bad[i][0], &e), -1);
    assert_non_null(strstr(kbc_buf_str(&e), bad[i][1]));
    kbc_buf_free(&e);
  }
  kbc_buf_free(&text);
  kbc_buf_free(&err);
}

/* Out-of-range and malformed numbers keep the defaults (as tests/cli pins
 * for KBC_UNROLL and KBC_GEMM_MIN_BLOCKS). */
static void test_cg_options_invalid(void **state) {
  (void)state;
  clear_cg_vars();
  const char *unroll[] = {"0", "65", "abc", ""}, *blocks[] = {"5", "9", "-1", "2x"}, *team[] = {"0", "1025", "x"};
  int saved = dup(2), devnull = open("/dev/null", O_WRONLY); /* the warnings */
  dup2(devnull, 2);
  for (int i = 0; i < 4; i++) {
    setenv("KBC_UNROLL", unroll[i], 1);
    setenv("KBC_GEMM_MIN_BLOCKS", blocks[i], 1);
    setenv("KBC_MAX_TEAM", team[i % 3], 1);
    setenv("KBC_GEMM_STAGES", blocks[i], 1); /* 5, 9, -1, 2x: out of 0..4 or not a number */
    cg_options o = cg_options_from_env();
    assert_int_equal(o.unroll, CG_UNROLL_DEFAULT);
    assert_int_equal(o.gemm_min_blocks, 0);
    assert_int_equal(o.max_team, 0);
    assert_int_equal(o.gemm_stages, 0);
  }
  dup2(saved, 2);
  close(saved);
  close(devnull);
  clear_cg_vars();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_flag),          cmocka_unit_test(test_parse_int),
      cmocka_unit_test(test_env_flag),            cmocka_unit_test(test_env_int),
      cmocka_unit_test(test_env_str),             cmocka_unit_test(test_invalid_warns_once),
      cmocka_unit_test(test_cg_options_defaults), cmocka_unit_test(test_cg_options_from_env),
      cmocka_unit_test(test_cg_options_invalid),  cmocka_unit_test(test_cg_options_apply),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
