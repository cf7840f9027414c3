/* resources.c — requests and offers of cores, memory and disk
 * (resources.h). */
#include "common/resources.h"

#include <stddef.h>
#include <string.h>

int cairn_resources_fit(const cairn_resources *req, const cairn_resources *avail) {
  return req->cores <= avail->cores && req->memory_mib <= avail->memory_mib &&
         req->disk_mib <= avail->disk_mib;
}

static void add_field(int64_t *acc, int64_t v, int add) {
  *acc = add ? *acc + v : *acc > v ? *acc - v : 0;
}

void cairn_resources_add(cairn_resources *acc, const cairn_resources *r, int add) {
  add_field(&acc->cores, r->cores, add);
  add_field(&acc->memory_mib, r->memory_mib, add);
  add_field(&acc->disk_mib, r->disk_mib, add);
}

void cairn_resources_max(cairn_resources *acc, const cairn_resources *r) {
  if (r->cores > acc->cores)
    acc->cores = r->cores;
  if (r->memory_mib > acc->memory_mib)
    acc->memory_mib = r->memory_mib;
  if (r->disk_mib > acc->disk_mib)
    acc->disk_mib = r->disk_mib;
}

int cairn_resources_equal(const cairn_resources *a, const cairn_resources *b) {
  return a->cores == b->cores && a->memory_mib == b->memory_mib && a->disk_mib == b->disk_mib;
}

cairn_status cairn_resources_parse(const json_t *v, const cairn_resources *def,
                                   cairn_resources *out, const char *where, cairn_error *err) {
  static const struct {
    const char *key;
    size_t off;
    int64_t lo, hi;
  } fields[] = {
    {"cores", offsetof(cairn_resources, cores), 1, CAIRN_MAX_CORES},
    {"memory_mib", offsetof(cairn_resources, memory_mib), 0, CAIRN_MAX_RES_MIB},
    {"disk_mib", offsetof(cairn_resources, disk_mib), 0, CAIRN_MAX_RES_MIB},
  };
  enum { NFIELDS = sizeof fields / sizeof fields[0] };
  cairn_resources r = *def;
  const char *key;
  json_t *x;
  if (!json_is_object(v))
    return cairn_error_set(err, CAIRN_EINVAL, "%s: \"resources\" must be an object with "
                           "\"cores\", \"memory_mib\" and/or \"disk_mib\"", where);
  json_object_foreach((json_t *)v, key, x) {
    int k = 0;
    while (k < NFIELDS && strcmp(fields[k].key, key) != 0)
      k++;
    if (k == NFIELDS)
      return cairn_error_set(err, CAIRN_EINVAL, "%s: resources: unknown field \"%s\"", where,
                             key);
    if (!json_is_integer(x) || json_integer_value(x) < fields[k].lo ||
        json_integer_value(x) > fields[k].hi)
      return cairn_error_set(err, CAIRN_EINVAL, "%s: resources: \"%s\" must be an integer "
                             "from %lld to %lld", where, key, (long long)fields[k].lo,
                             (long long)fields[k].hi);
    *(int64_t *)((char *)&r + fields[k].off) = json_integer_value(x);
  }
  *out = r;
  return CAIRN_OK;
}

json_t *cairn_resources_json(const cairn_resources *r) {
  return json_pack("{s:I, s:I, s:I}", "cores", (json_int_t)r->cores, "memory_mib",
                   (json_int_t)r->memory_mib, "disk_mib", (json_int_t)r->disk_mib);
}

uint64_t cairn_resources_unfit(const cairn_resources *classes, const uint32_t *counts, uint32_t n,
                               const cairn_resources *largest) {
  uint64_t unfit = 0;
  for (uint32_t k = 0; k < n; k++)
    if (!cairn_resources_fit(&classes[k], largest))
      unfit += counts[k];
  return unfit;
}
