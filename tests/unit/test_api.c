/* test_api.c — the public C API (include/kbc.h): results on the CPU
 * interpreter, and every error path (NULLs, unknown names, wrong ranks,
 * shapes and dtypes, missing arguments, bad options, bad specs) returning
 * the right status with a message, never crashing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kbc.h"

static const char spec[] =
    "kernel scale_rows\n"
    "axis n var\naxis m var\n"
    "input x f32[n, m]\ninput s f32[m]\n"
    "output y f32[n, m]\noutput total f32[n]\n"
    "y[i, j] = x[i, j] * s[j]\n"
    "total[i] = sum(j: x[i, j] * s[j])\n";

static kbc_program *compile(void) {
  kbc_program *p = NULL;
  assert_int_equal(kbc_compile_string(spec, "scale_rows.kb", NULL, &p), KBC_OK);
  return p;
}

static void test_run_cpu(void **state) {
  (void)state;
  kbc_program *p = compile();
  assert_string_equal(kbc_program_name(p), "scale_rows");
  assert_int_equal(kbc_program_num_args(p), 4);
  kbc_arg_info info;
  assert_int_equal(kbc_program_arg_info(p, 3, &info), KBC_OK);
  assert_string_equal(info.name, "total");
  assert_int_equal(info.role, KBC_ROLE_OUTPUT);
  int64_t xs[2] = {2, 3}, ss[1] = {3}, ts[1] = {2};
  float x[6] = {1, 2, 3, 4, 5, 6}, s[3] = {1, 10, 100}, y[6], total[2];
  kbc_arg args[] = {{"x", x, 2, xs, KBC_F32}, {"s", s, 1, ss, KBC_F32}, {"y", y, 2, xs, KBC_F32},
                    {"total", total, 1, ts, KBC_F32}};
  assert_int_equal(kbc_program_run_cpu(p, args, 4), KBC_OK);
  assert_true(y[5] == 600.0f && total[0] == 321.0f && total[1] == 654.0f);
  int64_t shape[8];
  int rank;
  assert_int_equal(kbc_program_output_shape(p, args, 2, "total", shape, &rank), KBC_OK);
  assert_int_equal(rank, 1);
  assert_int_equal(shape[0], 2);
  kbc_program_destroy(p);
}

/* kbc_program_run_reference: the spec as written where it is small (the
 * same values as the transformed program), the transformed program where
 * the written one would take over 4e8 flops (a softmax's denominator,
 * which hoisting computes once per row, per element: 64 x 4096^2). */
static void test_run_reference(void **state) {
  (void)state;
  static const char sm[] = "kernel sm\naxis b var\naxis k var\ninput x f32[b, k]\noutput p f32[b, k]\n"
                           "p[i, j] = exp(x[i, j]) / sum(j2: exp(x[i, j2]))\n";
  kbc_program *p = NULL;
  assert_int_equal(kbc_compile_string(sm, "sm.kb", NULL, &p), KBC_OK);
  for (int big = 0; big < 2; big++) {
    int64_t b = big ? 64 : 3, k = big ? 4096 : 5, shape[2] = {b, k};
    float *x = malloc(sizeof(float) * (size_t)(b * k)), *y = malloc(sizeof(float) * (size_t)(b * k)),
          *z = malloc(sizeof(float) * (size_t)(b * k));
    for (int64_t i = 0; i < b * k; i++) x[i] = (float)((i * 7919) % 13) / 13.0f;
    kbc_arg ay[] = {{"x", x, 2, shape, KBC_F32}, {"p", y, 2, shape, KBC_F32}};
    kbc_arg az[] = {{"x", x, 2, shape, KBC_F32}, {"p", z, 2, shape, KBC_F32}};
    int as_stated = -1;
    assert_int_equal(kbc_program_run_reference(p, ay, 2, &as_stated), KBC_OK);
    assert_int_equal(as_stated, !big);
    assert_int_equal(kbc_program_run_cpu(p, az, 2), KBC_OK);
    for (int64_t i = 0; i < b * k; i++)
      if (fabsf(y[i] - z[i]) > 1e-6f * fabsf(z[i])) fail_msg("p[%lld]: %g against %g", (long long)i, y[i], z[i]);
    free(x);
    free(y);
    free(z);
  }
  assert_int_equal(kbc_program_run_reference(NULL, NULL, 0, NULL), KBC_ERROR_ARGUMENT);
  kbc_program_destroy(p);
}

static void expect(kbc_status got, kbc_status want, const char *phrase) {
  assert_int_equal(got, want);
  if (!strstr(kbc_last_error(), phrase)) fail_msg("message '%s' lacks '%s'", kbc_last_error(), phrase);
}

static void test_argument_errors(void **state) {
  (void)state;
  kbc_program *p = compile();
  int64_t xs[2] = {2, 3}, ss[1] = {3}, bad[1] = {4}, ts[1] = {2};
  float x[6] = {0}, s[3] = {0}, y[6], total[2];
  kbc_arg ok[] = {{"x", x, 2, xs, KBC_F32}, {"s", s, 1, ss, KBC_F32}, {"y", y, 2, xs, KBC_F32},
                  {"total", total, 1, ts, KBC_F32}};
  kbc_arg a[4];
  memcpy(a, ok, sizeof a);
  expect(kbc_program_run_cpu(p, a, 3), KBC_ERROR_ARGUMENT, "missing output 'total'");
  a[1].name = "nope";
  expect(kbc_program_run_cpu(p, a, 4), KBC_ERROR_ARGUMENT, "unexpected input 'nope'"); /* ir_infer_vars' words */
  assert_int_equal(kbc_program_set_args_origin(p, "in.safetensors"), KBC_OK);
  expect(kbc_program_run_cpu(p, a, 4), KBC_ERROR_ARGUMENT, "in.safetensors: error: missing input 's'");
  assert_int_equal(kbc_program_set_args_origin(p, NULL), KBC_OK);
  memcpy(a, ok, sizeof a);
  a[1].shape = bad;
  expect(kbc_program_run_cpu(p, a, 4), KBC_ERROR_ARGUMENT, "m");
  memcpy(a, ok, sizeof a);
  a[0].rank = 3;
  expect(kbc_program_run_cpu(p, a, 4), KBC_ERROR_ARGUMENT, "rank 3");
  memcpy(a, ok, sizeof a);
  a[0].dtype = (kbc_dtype)7;
  expect(kbc_program_run_cpu(p, a, 4), KBC_ERROR_ARGUMENT, "dtype");
  memcpy(a, ok, sizeof a);
  a[0].data = NULL;
  expect(kbc_program_run_cpu(p, a, 4), KBC_ERROR_ARGUMENT, "data is NULL");
  memcpy(a, ok, sizeof a);
  a[3] = a[2];
  expect(kbc_program_run_cpu(p, a, 4), KBC_ERROR_ARGUMENT, "given twice");
  memcpy(a, ok, sizeof a);
  int64_t ys[2] = {2, 4};
  a[2].shape = ys;
  expect(kbc_program_run_cpu(p, a, 4), KBC_ERROR_ARGUMENT, "output 'y'");
  expect(kbc_program_run_cpu(p, NULL, 4), KBC_ERROR_ARGUMENT, "args is NULL");
  expect(kbc_program_run_cpu(NULL, ok, 4), KBC_ERROR_ARGUMENT, "NULL");
  expect(kbc_program_bind_axis(p, "q", 3), KBC_ERROR_ARGUMENT, "no axis 'q'");
  expect(kbc_program_bind_axis(p, "n", -1), KBC_ERROR_ARGUMENT, "positive");
  assert_int_equal(kbc_program_bind_axis(p, "n", 5), KBC_OK);
  expect(kbc_program_run_cpu(p, ok, 4), KBC_ERROR_ARGUMENT, "n");
  assert_int_equal(kbc_program_bind_axis(p, "n", 0), KBC_OK);
  assert_int_equal(kbc_program_run_cpu(p, ok, 4), KBC_OK);
  kbc_arg_info info;
  expect(kbc_program_arg_info(p, 9, &info), KBC_ERROR_ARGUMENT, "out of range");
  char *text;
  size_t len;
  expect(kbc_program_emit(p, "wat", &text, &len), KBC_ERROR_ARGUMENT, "not one of");
  assert_int_equal(kbc_program_emit(p, "ir", &text, &len), KBC_OK);
  assert_non_null(strstr(text, "total[i] = sum(j:"));
  kbc_free(text);
  kbc_program_destroy(p);
  kbc_program_destroy(NULL);
}

/* Warnings and errors as records: kbc_program_diagnostic for a program's
 * warnings, kbc_last_diagnostic for the last compile call's. */
static void test_diagnostic_records(void **state) {
  (void)state;
  const char *src = "kernel w\naxis n var\naxis k const 3\ninput x f32[n]\ninput b f32[n]\n"
                    "output y f32[n]\ny[i] = x[i]\n";
  kbc_program *p = NULL;
  assert_int_equal(kbc_compile_string(src, "w.kb", NULL, &p), KBC_OK);
  assert_int_equal(kbc_program_num_diagnostics(p), 2);
  assert_int_equal(kbc_program_num_warnings(p), 2);
  assert_int_equal(kbc_last_num_diagnostics(), 2);
  kbc_diagnostic d;
  assert_int_equal(kbc_program_diagnostic(p, 0, &d), KBC_OK);
  assert_int_equal(d.kind, KBC_DIAGNOSTIC_WARNING);
  assert_string_equal(d.file, "w.kb");
  assert_int_equal(d.line, 3);
  assert_int_equal(d.column, 6);
  assert_string_equal(d.message, "constant axis 'k' is never used");
  assert_string_equal(kbc_diagnostic_kind_name(d.kind), "warning");
  assert_int_equal(kbc_program_diagnostic(p, 1, &d), KBC_OK);
  assert_string_equal(d.message, "input 'b' is never read");
  assert_non_null(strstr(d.snippet, "input b f32[n]\n"));
  assert_non_null(strstr(kbc_program_diagnostics(p), "w.kb:5:7: warning: input 'b' is never read\n"));
  assert_int_equal(kbc_program_diagnostic(p, 2, &d), KBC_ERROR_ARGUMENT);
  kbc_program_destroy(p);
  assert_int_equal(kbc_compile_string("kernel e\ninput x f32[4]\noutput y f32[4]\ny[i] = q[i]\n", "e.kb", NULL, &p),
                   KBC_ERROR_SPEC);
  assert_true(kbc_last_num_diagnostics() >= 1);
  assert_int_equal(kbc_last_diagnostic(0, &d), KBC_OK);
  assert_int_equal(d.kind, KBC_DIAGNOSTIC_ERROR);
  assert_int_equal(d.line, 4);
}

/* What the CLI's check and compile --emit ir/ast read through the API. */
static void test_front_half_texts(void **state) {
  (void)state;
  kbc_program *p = compile();
  assert_true(kbc_program_num_statements(p) >= 1);
  assert_string_equal(kbc_program_diagnostics(p), "");
  char *text = NULL;
  size_t len = 0;
  assert_int_equal(kbc_program_ir_dump(p, NULL, &text, &len), KBC_OK);
  assert_int_equal(strlen(text), len);
  assert_non_null(strstr(text, "total[i] = sum(j:"));
  kbc_free(text);
  assert_string_equal(kbc_pass_name(0), "lower");
  int n = 0;
  while (kbc_pass_name(n)) assert_non_null(kbc_pass_help(n++));
  assert_true(n > 2);
  assert_null(kbc_pass_name(-1));
  assert_int_equal(kbc_program_ir_dump(p, kbc_pass_name(n - 1), &text, &len), KBC_OK);
  kbc_free(text);
  expect(kbc_program_ir_dump(p, "nosuchpass", &text, &len), KBC_ERROR_ARGUMENT, "nosuchpass");
  kbc_program_destroy(p);
  assert_int_equal(kbc_ast_dump("kernel k\naxis n var\n", "k.kb", &text, &len), KBC_OK);
  assert_non_null(strstr(text, "axis n var"));
  kbc_free(text);
  expect(kbc_ast_dump("kernel k\naxis = =\n", "k.kb", &text, &len), KBC_ERROR_SPEC, "k.kb:2:");
  assert_null(text);
}

static void test_compile_errors(void **state) {
  (void)state;
  kbc_program *p = (kbc_program *)1;
  expect(kbc_compile_string("input x f32[n]\n", "bad.kb", NULL, &p), KBC_ERROR_SPEC, "bad.kb:1:13: error: unknown name");
  assert_null(p);
  expect(kbc_compile_string(NULL, "x", NULL, &p), KBC_ERROR_ARGUMENT, "source is NULL");
  expect(kbc_compile_string(spec, "x", NULL, NULL), KBC_ERROR_ARGUMENT, "out is NULL");
  expect(kbc_compile_file("/nonexistent/x.kb", NULL, &p), KBC_ERROR_IO, "/nonexistent/x.kb");
  kbc_options opt = {.target = "sm_12345"};
  kbc_status s = kbc_compile_string(spec, "x", &opt, &p);
  assert_true(s == KBC_ERROR_ARGUMENT);
  opt = (kbc_options){.precision = (kbc_precision)9};
  expect(kbc_compile_string(spec, "x", &opt, &p), KBC_ERROR_ARGUMENT, "precision");
  assert_string_equal(kbc_status_name(KBC_ERROR_CUDA), "KBC_ERROR_CUDA");
  assert_non_null(kbc_version());
}

static void test_emit_cuda(void **state) {
  (void)state;
  kbc_options opt = {.target = "sm_90"};
  kbc_program *p;
  assert_int_equal(kbc_compile_string(spec, "scale_rows.kb", &opt, &p), KBC_OK);
  char *a, *b;
  size_t la, lb;
  assert_int_equal(kbc_program_emit(p, "cuda", &a, &la), KBC_OK);
  assert_int_equal(kbc_program_emit(p, "cuda", &b, &lb), KBC_OK);
  assert_int_equal(la, lb);
  assert_memory_equal(a, b, la); /* deterministic */
  assert_non_null(strstr(a, "__global__"));
  assert_non_null(strstr(a, "// total[i] = sum(j: x[i, j] * s[j])"));
  kbc_free(a);
  kbc_free(b);
  kbc_program_destroy(p);
}

/* kbc_options.config: code generation switches for one program (here the
 * rows family's unroll factor changes its text), errors naming the switch
 * (KBC_ERROR_ARGUMENT, no program); the tune records' store and load need
 * every var axis bound. */
static void test_config(void **state) {
  (void)state;
  kbc_options opt = {.target = "sm_90"}, unrolled = {.target = "sm_90", .config = "KBC_UNROLL=1, KBC_NO_VEC=yes"};
  kbc_program *p, *q;
  assert_int_equal(kbc_compile_string(spec, "scale_rows.kb", &opt, &p), KBC_OK);
  assert_int_equal(kbc_compile_string(spec, "scale_rows.kb", &unrolled, &q), KBC_OK);
  char *a, *b;
  size_t la, lb;
  assert_int_equal(kbc_program_emit(p, "cuda", &a, &la), KBC_OK);
  assert_int_equal(kbc_program_emit(q, "cuda", &b, &lb), KBC_OK);
  assert_true(la != lb || memcmp(a, b, la));
  kbc_free(a);
  kbc_free(b);
  char *settings = (char *)1;
  assert_int_equal(kbc_program_tune_load(p, &settings), KBC_ERROR_ARGUMENT); /* n and m not bound */
  assert_null(settings);
  assert_non_null(strstr(kbc_last_error(), "not bound"));
  assert_int_equal(kbc_program_tune_store(p, "KBC_NOPE=1", NULL), KBC_ERROR_ARGUMENT);
  assert_non_null(strstr(kbc_last_error(), "unknown switch 'KBC_NOPE'"));
  kbc_program_destroy(p);
  kbc_program_destroy(q);
  static const char *const bad[][2] = {{"KBC_UNROLL=0", "KBC_UNROLL takes a number from 1 to 64, not '0'"},
                                       {"KBC_NO_VEC=2", "KBC_NO_VEC takes 0 or 1, not '2'"},
                                       {"KBC_UNROLL", "expected NAME=VALUE"},
                                       {"KBC_UNROL=4", "unknown switch 'KBC_UNROL'"}};
  for (int i = 0; i < 4; i++) {
    kbc_options o = {.target = "sm_90", .config = bad[i][0]};
    p = (kbc_program *)1;
    assert_int_equal(kbc_compile_string(spec, "scale_rows.kb", &o, &p), KBC_ERROR_ARGUMENT);
    assert_null(p);
    assert_non_null(strstr(kbc_last_error(), bad[i][1]));
  }
}

/* A loss into a rank-0 output, with a rank-0 input: no shape (NULL) for
 * either, rank 0 reported for the output, a rank-1 argument refused. */
static void test_rank0(void **state) {
  (void)state;
  kbc_program *p = NULL;
  assert_int_equal(kbc_compile_string("kernel nll\naxis bsz var\naxis c var\n"
                                      "input t f32[bsz, c]\ninput logp f32[bsz, c]\ninput w f32\n"
                                      "output loss f32\n"
                                      "loss = -w * sum(b, k: t[b, k] * logp[b, k]) / bsz\n",
                                      "nll.kb", NULL, &p),
                   KBC_OK);
  int64_t ts[2] = {2, 3}, one[1] = {1};
  float t[6] = {1, 0, 0, 0, 0.5f, 0.5f}, logp[6] = {-1, -2, -3, -4, -5, -6}, w = 2, loss = 0;
  kbc_arg args[] = {{"t", t, 2, ts, KBC_F32}, {"logp", logp, 2, ts, KBC_F32}, {"w", &w, 0, NULL, KBC_F32},
                    {"loss", &loss, 0, NULL, KBC_F32}};
  assert_int_equal(kbc_program_run_cpu(p, args, 4), KBC_OK);
  assert_true(fabsf(loss - 2.0f * (1 + 2.5f + 3) / 2) < 1e-5f);
  int64_t shape[8];
  int rank = -1;
  assert_int_equal(kbc_program_output_shape(p, args, 3, "loss", shape, &rank), KBC_OK);
  assert_int_equal(rank, 0);
  args[3] = (kbc_arg){"loss", &loss, 1, one, KBC_F32};
  expect(kbc_program_run_cpu(p, args, 4), KBC_ERROR_ARGUMENT, "'loss' has rank 1, but the spec declares rank 0");
  kbc_program_destroy(p);
}

/* The var axes and what their presets make without tensors: the missing
 * ones named, a derived axis that is not positive, then the shapes, the
 * element count and the cost. */
static void test_preset_binding(void **state) {
  (void)state;
  kbc_program *p = NULL;
  assert_int_equal(kbc_compile_string("kernel win\naxis n var\naxis k var\naxis o = n - k + 1\n"
                                      "input x f32[n]\ninput w f32[k]\noutput y f32[o]\n"
                                      "y[i] = sum(d: x[i + d] * w[d])\n",
                                      "win.kb", NULL, &p),
                   KBC_OK);
  assert_int_equal(kbc_program_num_var_axes(p), 2);
  const char *name = NULL;
  int64_t v = -1;
  assert_int_equal(kbc_program_var_axis(p, 1, &name, &v), KBC_OK);
  assert_string_equal(name, "k");
  assert_int_equal(v, 0);
  expect(kbc_program_var_axis(p, 2, &name, &v), KBC_ERROR_ARGUMENT, "out of range");
  kbc_binding_info info;
  int64_t shape[KBC_MAX_RANK];
  expect(kbc_program_binding(p, &info), KBC_ERROR_ARGUMENT, "missing: n, k");
  assert_int_equal(kbc_program_bind_axis(p, "n", 3), KBC_OK);
  assert_int_equal(kbc_program_bind_axis(p, "k", 5), KBC_OK);
  expect(kbc_program_binding(p, &info), KBC_ERROR_ARGUMENT, "win.kb");
  expect(kbc_program_arg_shape(p, 2, shape), KBC_ERROR_ARGUMENT, "positive");
  assert_int_equal(kbc_program_bind_axis(p, "n", 10), KBC_OK);
  assert_int_equal(kbc_program_var_axis(p, 0, &name, &v), KBC_OK);
  assert_int_equal(v, 10);
  assert_int_equal(kbc_program_binding(p, &info), KBC_OK);
  assert_int_equal(info.elements, 10 + 5 + 6);
  assert_true(info.flops > 0 && info.bytes >= 4.0 * (10 + 5 + 6));
  assert_int_equal(kbc_program_arg_shape(p, 2, shape), KBC_OK);
  assert_int_equal(shape[0], 6);
  expect(kbc_program_arg_shape(p, 3, shape), KBC_ERROR_ARGUMENT, "out of range");
  expect(kbc_program_binding(p, NULL), KBC_ERROR_ARGUMENT, "NULL");
  kbc_program_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_preset_binding),
      cmocka_unit_test(test_run_cpu),
      cmocka_unit_test(test_run_reference),
      cmocka_unit_test(test_rank0),
      cmocka_unit_test(test_argument_errors),
      cmocka_unit_test(test_front_half_texts),
      cmocka_unit_test(test_diagnostic_records),
      cmocka_unit_test(test_compile_errors),
      cmocka_unit_test(test_emit_cuda),
      cmocka_unit_test(test_config),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
