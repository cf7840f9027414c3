/* resources.c — requests and offers of cores, memory and disk
 * (resources.h). */
#include "common/resources.h"

#include <stddef.h>
#include <string.h>

int cairn__resources_fit(const cairn__resources *req, const cairn__resources *avail) {
  return req->cores <= avail->cores && req->memory_mib <= avail->memory_mib &&
         req->disk_mib <= avail->disk_mib;
}

static void add_field(int64_t *acc, int64_t v, int add) {
  *acc = add ? *acc + v : *acc > v ? *acc - v : 0;
}

void cairn__resources_add(cairn__resources *acc, const cairn__resources *r, int add) {
  add_field(&acc->cores, r->cores, add);
  add_field(&acc->memory_mib, r->memory_mib, add);
  add_field(&acc->disk_mib, r->disk_mib, add);
}

void cairn__resources_max(cairn__resources *acc, const cairn__resources *r) {
  if (r->cores > acc->cores)
    acc->cores = r->cores;
  if (r->memory_mib > acc->memory_mib)
    acc->memory_mib = r->memory_mib;
  if (r->disk_mib > acc->disk_mib)
    acc->disk_mib = r->disk_mib;
}

int cairn__resources_equal(const cairn__resources *a, const cairn__resources *b) {
  return a->cores == b->cores && a->memory_mib == b->memory_mib && a->disk_mib == b->disk_mib;
}

cairn_status cairn__resources_parse(const json_t *v, const cairn__resources *def,
                                   cairn__resources *out, const char *where, cairn_error *err) {
  static const struct {
    const char *key;
    size_t off;
    int64_t lo, hi;
  } fields[] = {
    {"cores", offsetof(cairn__resources, cores), 1, CAIRN_MAX_CORES},
    {"memory_mib", offsetof(cairn__resources, memory_mib), 0, CAIRN_MAX_RES_MIB},
    {"disk_mib", offsetof(cairn__resources, disk_mib), 0, CAIRN_MAX_RES_MIB},
  };
  enum { NFIELDS = sizeof fields / sizeof fields[0] };
  cairn__resources r = *def;
  const char *key;
  json_t *x;
  if (!json_is_object(v))
    return cairn__error_set(err, CAIRN_EINVAL, "%s: \"resources\" must be an object with "
                           "\"cores\", \"memory_mib\" and/or \"disk_mib\"", where);
  json_object_foreach((json_t *)v, key, x) {
    int k = 0;
    while (k < NFIELDS && strcmp(fields[k].key, key) != 0)
      k++;
    if (k == NFIELDS)
      return cairn__error_set(err, CAIRN_EINVAL, "%s: resources: unknown field \"%s\"", where,
                             key);
    if (!json_is_integer(x) || json_integer_value(x) < fields[k].lo ||
        json_integer_value(x) > fields[k].hi)
      return cairn__error_set(err, CAIRN_EINVAL, "%s: resources: \"%s\" must be an integer "
                             "from %lld to %lld", where, key, (long long)fields[k].lo,
                             (long long)fields[k].hi);
    *(int64_t *)((char *)&r + fields[k].off) = json_integer_value(x);
  }
  *out = r;
  return CAIRN_OK;
}

json_t *cairn__resources_json(const cairn__resources *r) {
  return json_pack("{s:I, s:I, s:I}", "cores", (json_int_t)r->cores, "memory_mib",
                   (json_int_t)r->memory_mib, "disk_mib", (json_int_t)r->disk_mib);
}

uint64_t cairn__resources_unfit(const cairn__resources *classes, const uint32_t *counts, uint32_t n,
                               const cairn__resources *largest) {
  uint64_t unfit = 0;
  for (uint32_t k = 0; k < n; k++)
    if (!cairn__resources_fit(&classes[k], largest))
      unfit += counts[k];
  return unfit;
}
