/* outputs.c — output patterns, output paths and the result digest. */
#include "common/outputs.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"

int cairn__output_name_ok(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > CAIRN_MAX_OUTPUT_NAME || name[0] == '/')
    return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
      return 0;
  for (const char *c = name; *c;) {
    size_t len = strcspn(c, "/");
    if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
      return 0;
    c += len;
    if (*c == '/' && !*++c)
      return 0; /* trailing '/' */
  }
  return 1;
}

/* 1 for a glob whose brackets close (a '[' without its ']' is refused, not
 * taken literally), with *glob set when it has a wildcard. */
static int glob_ok(const char *s, int *glob) {
  *glob = 0;
  for (const char *p = s; *p; p++) {
    if (*p == '\\')
      return 0; /* no escapes: names are taken as written */
    if (*p == '*' || *p == '?')
      *glob = 1;
    else if (*p == '[') {
      const char *q = p + 1;
      if (*q == '!' || *q == '^')
        q++;
      if (*q == ']')
        q++;
      while (*q && *q != ']' && *q != '/')
        q++;
      if (*q != ']')
        return 0;
      *glob = 1;
      p = q;
    }
  }
  return 1;
}

void cairn__output_specs_free(cairn__output_patterns *p) {
  for (uint32_t i = 0; p && i < p->n; i++)
    free(p->v[i].name);
  if (p) {
    free(p->v);
    p->v = NULL;
    p->n = 0;
  }
}

cairn_status cairn__outputs_parse(const json_t *arr, const char *where,
                                 cairn__output_patterns *out, cairn_error *err) {
  if (!json_is_array(arr))
    return cairn__error_set(err, CAIRN_EINVAL, "%s: \"outputs\" must be an array", where);
  size_t n = json_array_size(arr);
  if (n > CAIRN_MAX_OUTPUT_PATTERNS)
    return cairn__error_set(err, CAIRN_EINVAL, "%s: \"outputs\" has %zu entries (at most %u)",
                           where, n, CAIRN_MAX_OUTPUT_PATTERNS);
  out->v = calloc(n ? n : 1, sizeof *out->v);
  out->n = 0;
  if (!out->v)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(arr, i), *name = e, *mib = NULL;
    if (json_is_object(e)) {
      const char *k;
      json_t *v;
      json_object_foreach(e, k, v) if (strcmp(k, "name") && strcmp(k, "max_mib")) {
        cairn__output_specs_free(out);
        return cairn__error_set(err, CAIRN_EINVAL, "%s: outputs[%zu]: unknown field \"%s\"",
                               where, i, k);
      }
      name = json_object_get(e, "name");
      mib = json_object_get(e, "max_mib");
    }
    const char *s = json_string_value(name);
    int glob = 0;
    if (!s || strlen(s) != json_string_length(name) || !cairn__output_name_ok(s) ||
        !glob_ok(s, &glob)) {
      cairn__output_specs_free(out);
      return cairn__error_set(err, CAIRN_EINVAL,
                             "%s: outputs[%zu] must be a relative path or glob (no \"..\", "
                             "no leading '/', no empty part, closed brackets, no '\\') or "
                             "{\"name\", \"max_mib\"}", where, i);
    }
    if (mib && (!json_is_integer(mib) || json_integer_value(mib) < 1 ||
                json_integer_value(mib) > CAIRN_MAX_OUTPUT_MIB)) {
      cairn__output_specs_free(out);
      return cairn__error_set(err, CAIRN_EINVAL, "%s: outputs[%zu].max_mib must be an integer "
                             "from 1 to %d", where, i, CAIRN_MAX_OUTPUT_MIB);
    }
    for (uint32_t k = 0; k < out->n; k++)
      if (strcmp(out->v[k].name, s) == 0) {
        cairn__error_set(err, CAIRN_EINVAL, "%s: output \"%s\" is listed twice", where, s);
        cairn__output_specs_free(out);
        return CAIRN_EINVAL;
      }
    cairn__output_pattern *p = &out->v[out->n];
    p->name = strdup(s);
    if (!p->name) {
      cairn__output_specs_free(out);
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    }
    p->max_mib = mib ? json_integer_value(mib) : CAIRN_DEFAULT_OUTPUT_MIB;
    p->glob = glob;
    out->n++;
  }
  return CAIRN_OK;
}

int cairn__outputs_copy(const cairn__output_patterns *from, cairn__output_patterns *to) {
  to->n = 0;
  to->v = calloc(from->n ? from->n : 1, sizeof *to->v);
  if (!to->v)
    return -1;
  for (uint32_t i = 0; i < from->n; i++) {
    to->v[i] = from->v[i];
    if (!(to->v[i].name = strdup(from->v[i].name))) {
      cairn__output_specs_free(to);
      return -1;
    }
    to->n = i + 1;
  }
  return 0;
}

json_t *cairn__outputs_json(const cairn__output_patterns *p) {
  json_t *a = json_array();
  for (uint32_t i = 0; a && i < p->n; i++)
    if (json_array_append_new(a, json_pack("{s:s, s:I}", "name", p->v[i].name, "max_mib",
                                           (json_int_t)p->v[i].max_mib))) {
      json_decref(a);
      return NULL;
    }
  return a;
}

int cairn__outputs_match(const cairn__output_patterns *p, const char *name) {
  for (uint32_t i = 0; i < p->n; i++)
    if (p->v[i].glob ? fnmatch(p->v[i].name, name, FNM_PATHNAME | FNM_PERIOD) == 0
                     : strcmp(p->v[i].name, name) == 0)
      return (int)i;
  return -1;
}

int64_t cairn__outputs_max_bytes(const cairn__output_patterns *p) {
  int64_t m = 0;
  for (uint32_t i = 0; i < p->n; i++)
    if (p->v[i].max_mib > m)
      m = p->v[i].max_mib;
  return m * 1024 * 1024;
}

static int cmp_file(const void *a, const void *b) {
  return strcmp(((const cairn__output_file *)a)->name, ((const cairn__output_file *)b)->name);
}

void cairn__digest_result_files(const char stdout_digest[65], cairn__output_file *files, size_t n,
                         char out[65]) {
  if (n == 0) {
    memcpy(out, stdout_digest, 65);
    return;
  }
  qsort(files, n, sizeof *files, cmp_file);
  cairn__sha256 h;
  cairn__sha256_init(&h);
  cairn__sha256_update(&h, stdout_digest, 64);
  for (size_t i = 0; i < n; i++) {
    cairn__sha256_update(&h, files[i].name, strlen(files[i].name) + 1);
    cairn__sha256_update(&h, files[i].sha256, 64);
    cairn__sha256_update(&h, "\n", 1);
  }
  cairn__sha256_final_hex(&h, out);
}
