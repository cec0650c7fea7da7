/* info_json.c — `kbc info --json`: what rt_info (device.c) prints as
 * text, as one JSON object written through the escaping writers of json.h.
 *
 *   {"kbc": VERSION,
 *    "nvrtc": {"version": "13.0", "library": L, "targets": ["sm_80", ...]} or null,
 *    "nvrtc_error": null or a message,
 *    "kbc_targets": ["sm_80", ...],
 *    "driver": {"version": "13.0", "library": L} or null, "driver_error": ...,
 *    "devices": [{"ordinal", "name", "cc": "9.0", "target", "sm_count",
 *                 "memory_bytes", "smem_per_block_optin", "l2_bytes"} or
 *                {"ordinal", "error"}], "devices_error": ...,
 *    "cache": {"dir", "exists", "entries", "bytes", "error"},
 *    "always_compile": bool, "dump_dir": null or a path}
 * Before: nothing (no GPU needed).  After: the object and a newline appended. */
#include <stdio.h>
#include <unistd.h>

#include "cache.h"
#include "cuda_api.h"
#include "device.h"
#include "json.h"
#include "nvrtc.h"
#include "support/env.h"

static void key(kbc_buf *o, const char *k, int first) {
  if (!first) kbc_buf_puts(o, ", ");
  rt_json_put_string(o, k);
  kbc_buf_puts(o, ": ");
}

static void nvrtc_part(kbc_buf *o, rt_err *err) {
  int major = 0, minor = 0, archs[128];
  key(o, "nvrtc", 0);
  if (rt_nvrtc_version(&major, &minor, err) != 0) {
    kbc_buf_puts(o, "null");
    key(o, "nvrtc_error", 0);
    rt_json_put_string(o, rt_err_msg(err));
    return;
  }
  kbc_buf_printf(o, "{\"version\": \"%d.%d\", \"library\": ", major, minor);
  rt_json_put_string(o, rt_nvrtc_lib_name());
  kbc_buf_puts(o, ", \"targets\": [");
  int n = rt_nvrtc_supported_archs(archs, 128, NULL);
  for (int i = 0; i < n && i < 128; i++) kbc_buf_printf(o, "%s\"sm_%d\"", i ? ", " : "", archs[i]);
  kbc_buf_puts(o, "]}, \"nvrtc_error\": null");
}

static void devices_part(kbc_buf *o, rt_err *err) {
  int count = 0;
  const rt_cuda_api *cu = rt_cuda(err);
  key(o, "driver", 0);
  if (!cu) {
    kbc_buf_puts(o, "null, \"driver_error\": ");
    rt_json_put_string(o, rt_err_msg(err));
    kbc_buf_puts(o, ", \"devices\": [], \"devices_error\": null");
    return;
  }
  int v = 0;
  cu->cuDriverGetVersion(&v);
  kbc_buf_printf(o, "{\"version\": \"%d.%d\", \"library\": ", v / 1000, v % 1000 / 10);
  rt_json_put_string(o, rt_cuda_lib_name());
  kbc_buf_puts(o, "}, \"driver_error\": null, \"devices\": [");
  int bad = rt_device_count(&count, err) < 0;
  for (int i = 0; !bad && i < count; i++) {
    rt_device_props p;
    kbc_buf_printf(o, "%s{\"ordinal\": %d, ", i ? ", " : "", i);
    if (rt_device_query(i, &p, err) < 0) {
      kbc_buf_puts(o, "\"error\": ");
      rt_json_put_string(o, rt_err_msg(err));
      kbc_buf_puts(o, "}");
      continue;
    }
    char arch[16];
    rt_arch_of_cc(p.cc_major, p.cc_minor, arch, sizeof arch);
    kbc_buf_puts(o, "\"name\": ");
    rt_json_put_string(o, p.name);
    kbc_buf_printf(o, ", \"cc\": \"%d.%d\", \"target\": ", p.cc_major, p.cc_minor);
    rt_json_put_string(o, arch);
    kbc_buf_printf(o, ", \"sm_count\": %d, \"memory_bytes\": %zu, \"smem_per_block_optin\": %d, \"l2_bytes\": %d}",
                   p.sm_count, p.total_mem, p.smem_per_block_optin, p.l2_bytes);
  }
  kbc_buf_puts(o, "], \"devices_error\": ");
  if (bad) rt_json_put_string(o, rt_err_msg(err));
  else kbc_buf_puts(o, "null");
}

static void cache_part(kbc_buf *o, rt_err *err) {
  kbc_buf dir = {0};
  long entries = 0;
  long long bytes = 0;
  key(o, "cache", 0);
  int unusable = rt_cache_dir_path(&dir, err) < 0;
  int exists = !unusable && access(dir.data, F_OK) == 0;
  int bad = exists && rt_cache_stats(dir.data, &entries, &bytes, err) < 0;
  kbc_buf_puts(o, "{\"dir\": ");
  rt_json_put_string(o, unusable ? NULL : dir.data);
  kbc_buf_printf(o, ", \"exists\": %s, \"entries\": %ld, \"bytes\": %lld, \"error\": ", exists ? "true" : "false",
                 entries, bytes);
  rt_json_put_string(o, unusable || bad ? rt_err_msg(err) : NULL);
  kbc_buf_puts(o, "}");
  kbc_buf_free(&dir);
}

void rt_info_json(const char *kbc_version, kbc_buf *out) {
  rt_err err = {0};
  kbc_buf_puts(out, "{\"kbc\": ");
  rt_json_put_string(out, kbc_version);
  nvrtc_part(out, &err);
  kbc_buf_puts(out, ", \"kbc_targets\": [");
  for (int i = 0; rt_kbc_archs[i]; i++) {
    if (i) kbc_buf_puts(out, ", ");
    rt_json_put_string(out, rt_kbc_archs[i]);
  }
  kbc_buf_puts(out, "]");
  devices_part(out, &err);
  cache_part(out, &err);
  kbc_buf_printf(out, ", \"always_compile\": %s, \"dump_dir\": ", kbc_env_flag("KBC_ALWAYS_COMPILE", 0) ? "true" : "false");
  rt_json_put_string(out, kbc_env_str("KBC_DUMP_DIR"));
  kbc_buf_puts(out, "}\n");
  rt_err_free(&err);
}
