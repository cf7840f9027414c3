/* autosize.c — measurements and the sizing policy (autosize.h). */
#include "common/autosize.h"

#include <math.h>
#include <string.h>

cairn_status cairn__usage_parse(const json_t *v, cairn__usage *u, cairn_error *err) {
  const char *key;
  json_t *x;
  *u = CAIRN_USAGE_NONE;
  if (!json_is_object(v))
    return cairn__error_set(err, CAIRN_EINVAL, "\"%s\" must be an object with \"memory_bytes\", "
                           "\"disk_bytes\" and/or \"wall_seconds\"", CAIRN_USAGE_KEY);
  json_object_foreach((json_t *)v, key, x) {
    int64_t *bytes = strcmp(key, "memory_bytes") == 0 ? &u->memory_bytes
                     : strcmp(key, "disk_bytes") == 0 ? &u->disk_bytes
                                                      : NULL;
    if (bytes) {
      if (!json_is_integer(x) || json_integer_value(x) < 0 ||
          json_integer_value(x) > CAIRN_MAX_USAGE_BYTES)
        return cairn__error_set(err, CAIRN_EINVAL, "%s.%s must be an integer from 0 to %lld",
                               CAIRN_USAGE_KEY, key, (long long)CAIRN_MAX_USAGE_BYTES);
      *bytes = json_integer_value(x);
    } else if (strcmp(key, "wall_seconds") == 0) {
      double s = json_number_value(x);
      if (!json_is_number(x) || !isfinite(s) || s < 0 || s > CAIRN_MAX_USAGE_SECONDS)
        return cairn__error_set(err, CAIRN_EINVAL, "%s.wall_seconds must be a number from 0 "
                               "to %.0f", CAIRN_USAGE_KEY, CAIRN_MAX_USAGE_SECONDS);
      u->wall_seconds = s;
    } else
      return cairn__error_set(err, CAIRN_EINVAL, "%s: unknown field \"%.64s\"", CAIRN_USAGE_KEY,
                             key);
  }
  return CAIRN_OK;
}

json_t *cairn__usage_json(const cairn__usage *u) {
  json_t *o = json_object();
  if (o && u->memory_bytes >= 0)
    json_object_set_new(o, "memory_bytes", json_integer(u->memory_bytes));
  if (o && u->disk_bytes >= 0)
    json_object_set_new(o, "disk_bytes", json_integer(u->disk_bytes));
  if (o && u->wall_seconds >= 0)
    json_object_set_new(o, "wall_seconds", json_real(u->wall_seconds));
  return o;
}

int cairn__usage_any(const cairn__usage *u) {
  return u->memory_bytes >= 0 || u->disk_bytes >= 0 || u->wall_seconds >= 0;
}

static int64_t mib_up(int64_t bytes) { return (bytes + (1ll << 20) - 1) >> 20; }

int cairn__peak_note(cairn__peak *p, const cairn__usage *u, double cpu_seconds) {
  cairn__peak before = *p;
  if (!cairn__usage_any(u))
    return 0;
  p->measured = 1;
  if (u->memory_bytes >= 0 && mib_up(u->memory_bytes) > p->memory_mib)
    p->memory_mib = mib_up(u->memory_bytes);
  if (u->disk_bytes >= 0 && mib_up(u->disk_bytes) > p->disk_mib)
    p->disk_mib = mib_up(u->disk_bytes);
  if (cpu_seconds >= 0 && u->wall_seconds > 0 && cpu_seconds / u->wall_seconds > p->cpu_ratio)
    p->cpu_ratio = cpu_seconds / u->wall_seconds;
  return memcmp(&before, p, sizeof before) != 0;
}

int64_t cairn__autosize_amount(int64_t peak_mib) {
  if (peak_mib < 0)
    peak_mib = 0;
  int64_t pct = peak_mib + (peak_mib * CAIRN_AUTOSIZE_MARGIN_PCT + 99) / 100;
  int64_t least = peak_mib + CAIRN_AUTOSIZE_MARGIN_MIB;
  return pct > least ? pct : least;
}

int64_t cairn__autosize_cores(double cpu_ratio) {
  double c = ceil(cpu_ratio - CAIRN_AUTOSIZE_CORE_SLACK);
  return !(c >= 1) ? 1 : c > CAIRN_MAX_CORES ? CAIRN_MAX_CORES : (int64_t)c;
}

cairn__resources cairn__autosize_request(const cairn__peak *p, const cairn__resources *whole,
                                        const cairn__resources *cap) {
  cairn__resources r = *whole;
  if (p->measured)
    r = (cairn__resources){cairn__autosize_cores(p->cpu_ratio),
                           cairn__autosize_amount(p->memory_mib),
                           cairn__autosize_amount(p->disk_mib)};
  if (cap) {
    r.cores = r.cores < cap->cores ? r.cores : cap->cores;
    r.memory_mib = r.memory_mib < cap->memory_mib ? r.memory_mib : cap->memory_mib;
    r.disk_mib = r.disk_mib < cap->disk_mib ? r.disk_mib : cap->disk_mib;
  }
  if (r.cores < 1)
    r.cores = 1;
  return r;
}

int64_t cairn__autosize_grow(int64_t failed_mib, int64_t cap_mib) {
  if (failed_mib <= 0)
    return 0;
  int64_t next = failed_mib > CAIRN_MAX_RES_MIB / 2 ? CAIRN_MAX_RES_MIB : 2 * failed_mib;
  if (cap_mib >= 0 && next > cap_mib)
    next = cap_mib;
  return next > failed_mib ? next : 0;
}

int cairn__category_valid(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > CAIRN_MAX_CATEGORY_LEN)
    return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
      return 0;
  return 1;
}
