/* taskrun.c — limits, environment and stdin of a task; run failure reasons.
 * Costs: parse and merge O(V^2) for V <= CAIRN_MAX_ENV variables; each
 * name is checked against the deny list in O(length of the list). */
#include "common/taskrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const limit_names[CAIRN_LIMIT_COUNT] = CAIRN_LIMIT_NAMES;
static const char *const limit_reasons[CAIRN_LIMIT_COUNT] = CAIRN_LIMIT_REASONS;

void cairn__task_run_free(cairn__task_run *r) {
  if (!r)
    return;
  for (uint32_t i = 0; i < r->nenv; i++) {
    free(r->env_names[i]);
    free(r->env_values[i]);
  }
  free(r->env_names);
  free(r->env_values);
  free(r->stdin_name);
  memset(r, 0, sizeof *r);
}

int cairn__task_run_empty(const cairn__task_run *r) {
  for (int i = 0; i < CAIRN_LIMIT_COUNT; i++)
    if (r->limits[i])
      return 0;
  return r->nenv == 0 && !r->stdin_name && r->network <= 0;
}

int cairn__env_name_ok(const char *s) {
  if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
    return 0;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
          *p == '_'))
      return 0;
  return strncmp(s, CAIRN_ENV_RESERVED, strlen(CAIRN_ENV_RESERVED)) != 0;
}

/* The names a job may not set (cairn__env_name_denied): whole names, then
 * prefixes. Sources: glibc's sysdeps/generic/unsecvars.h (what the loader
 * drops for set-user-ID programs), the shells' startup and prompt
 * variables, and the path and option variables of common interpreters. */
static const char *const denied_names[] = {
  /* glibc's "unsecure" variables, besides the LD_* and MALLOC_* prefixes */
  "GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH",
  "NIS_PATH", "NLSPATH", "RES_OPTIONS", "TZDIR",
  /* shells: startup files, options, prompts and traces that run commands */
  "ENV", "SHELLOPTS", "BASHOPTS", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "IFS", "CDPATH",
  "GLOBIGNORE", "FPATH", "ZDOTDIR", "SHELL",
  /* interpreters and runtimes: module paths, start-up options and files */
  "NODE_OPTIONS", "NODE_PATH", "CLASSPATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
  "JDK_JAVA_OPTIONS", "TCLLIBPATH", "PHPRC", "PHP_INI_SCAN_DIR", "R_PROFILE", "R_PROFILE_USER",
  "R_ENVIRON", "R_ENVIRON_USER", "R_LIBS", "R_LIBS_USER", "R_LIBS_SITE", "JULIA_LOAD_PATH",
  "JULIA_DEPOT_PATH", "GEM_HOME", "GEM_PATH",
  /* libraries and tools that load plug-ins or start helper programs */
  "OPENSSL_CONF", "OPENSSL_ENGINES", "OPENSSL_MODULES", "SSH_ASKPASS", "EDITOR", "VISUAL",
  "PAGER", "LESSOPEN", "LESSCLOSE",
  /* set by the worker for every app (docs/worker.md) */
  "PATH", "HOME", "TMPDIR",
};
static const char *const denied_prefixes[] = {
  "LD_",     /* the dynamic loader: LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, ... */
  "DYLD_",   /* the macOS loader */
  "MALLOC_", /* glibc's allocator: MALLOC_TRACE writes a file it names */
  "RESOLV_", /* the resolver's configuration (RESOLV_HOST_CONF) */
  "BASH_",   /* BASH_ENV, exported functions (BASH_FUNC_*), BASH_XTRACEFD */
  "PYTHON",  /* PYTHONPATH, PYTHONSTARTUP, PYTHONHOME, PYTHONBREAKPOINT, ... */
  "PERL",    /* PERL5LIB, PERL5OPT, PERLLIB, PERL5DB, ... */
  "RUBY",    /* RUBYOPT, RUBYLIB */
  "LUA_",    /* LUA_INIT (runs code), LUA_PATH, LUA_CPATH and their versions */
  "GIT_",    /* GIT_SSH_COMMAND, GIT_EXEC_PATH, GIT_CONFIG_*, ... */
  "XDG_",    /* where tools read their configuration (XDG_CONFIG_HOME, ...) */
};

int cairn__env_name_denied(const char *name) {
  if (!name)
    return 1;
  for (size_t i = 0; i < sizeof denied_names / sizeof *denied_names; i++)
    if (strcmp(name, denied_names[i]) == 0)
      return 1;
  for (size_t i = 0; i < sizeof denied_prefixes / sizeof *denied_prefixes; i++)
    if (strncmp(name, denied_prefixes[i], strlen(denied_prefixes[i])) == 0)
      return 1;
  return 0;
}

static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

/* Sets variable name to value in r (replacing an earlier value). */
static cairn_status env_set(cairn__task_run *r, const char *name, const char *value,
                            const char *where, cairn_error *err) {
  size_t bytes = strlen(name) + strlen(value) + 2;
  for (uint32_t i = 0; i < r->nenv; i++) {
    if (strcmp(r->env_names[i], name) == 0) {
      char *v = dup_n(value, strlen(value));
      if (!v)
        return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
      free(r->env_values[i]);
      r->env_values[i] = v;
      bytes = 0;
    } else
      bytes += strlen(r->env_names[i]) + strlen(r->env_values[i]) + 2;
  }
  if (bytes > CAIRN_MAX_ENV_BYTES)
    return cairn__error_set(err, CAIRN_EINVAL, "%s: \"env\" exceeds %u bytes (NAME=VALUE each)",
                           where, CAIRN_MAX_ENV_BYTES);
  for (uint32_t i = 0; i < r->nenv; i++)
    if (strcmp(r->env_names[i], name) == 0)
      return CAIRN_OK;
  if (r->nenv >= CAIRN_MAX_ENV)
    return cairn__error_set(err, CAIRN_EINVAL, "%s: \"env\" has more than %u variables", where,
                           CAIRN_MAX_ENV);
  char **n = realloc(r->env_names, (r->nenv + 1) * sizeof *n);
  if (n)
    r->env_names = n;
  char **v = realloc(r->env_values, (r->nenv + 1) * sizeof *v);
  if (v)
    r->env_values = v;
  if (!n || !v)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  r->env_names[r->nenv] = dup_n(name, strlen(name));
  r->env_values[r->nenv] = dup_n(value, strlen(value));
  r->nenv++;
  if (!r->env_names[r->nenv - 1] || !r->env_values[r->nenv - 1])
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  return CAIRN_OK;
}

static cairn_status parse_limits(json_t *lim, const char *where, cairn__task_run *r,
                                 cairn_error *err) {
  const char *key;
  json_t *v;
  if (!json_is_object(lim))
    return cairn__error_set(err, CAIRN_EINVAL, "%s: \"limits\" must be an object", where);
  json_object_foreach(lim, key, v) {
    int i = 0;
    while (i < CAIRN_LIMIT_COUNT && strcmp(limit_names[i], key) != 0)
      i++;
    if (i == CAIRN_LIMIT_COUNT)
      return cairn__error_set(err, CAIRN_EINVAL,
                             "%s: limits: unknown field \"%s\" (wall_seconds, cpu_seconds, "
                             "memory_mib, disk_mib, output_mib)", where, key);
    if (!json_is_integer(v) || json_integer_value(v) < 1 ||
        json_integer_value(v) > CAIRN_LIMIT_MAX)
      return cairn__error_set(err, CAIRN_EINVAL, "%s: limits.%s must be an integer from 1 to %lld",
                             where, key, (long long)CAIRN_LIMIT_MAX);
    r->limits[i] = json_integer_value(v);
  }
  return CAIRN_OK;
}

cairn_status cairn__task_run_parse(json_t *obj, const char *where, cairn__task_run *r,
                                  cairn_error *err) {
  json_t *lim = json_object_get(obj, "limits"), *env = json_object_get(obj, "env");
  json_t *in = json_object_get(obj, "stdin"), *net = json_object_get(obj, "network");
  cairn_status st = CAIRN_OK;
  if (net && !json_is_boolean(net))
    return cairn__error_set(err, CAIRN_EINVAL, "%s: \"network\" must be true or false", where);
  if (net)
    r->network = json_is_true(net) ? 1 : -1;
  if (lim && (st = parse_limits(lim, where, r, err)) != CAIRN_OK)
    return st;
  if (env) {
    const char *name;
    json_t *v;
    if (!json_is_object(env))
      return cairn__error_set(err, CAIRN_EINVAL, "%s: \"env\" must be an object of strings", where);
    json_object_foreach(env, name, v) {
      if (!cairn__env_name_ok(name))
        return cairn__error_set(err, CAIRN_EINVAL,
                               "%s: env: bad variable name \"%.64s\" (want "
                               "[A-Za-z_][A-Za-z0-9_]*, not CAIRN_*)", where, name);
      if (cairn__env_name_denied(name))
        return cairn__error_set(err, CAIRN_EINVAL,
                               "%s: env: %s may not be set by a job (it would make the loader, "
                               "a shell or an interpreter run code or read files the job "
                               "chooses, or the worker sets it; docs/security.md)", where, name);
      if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
        return cairn__error_set(err, CAIRN_EINVAL,
                               "%s: env.%s must be a string without NUL", where, name);
      if ((st = env_set(r, name, json_string_value(v), where, err)) != CAIRN_OK)
        return st;
    }
  }
  if (in) {
    if (!json_is_string(in) || json_string_length(in) == 0 ||
        strlen(json_string_value(in)) != json_string_length(in))
      return cairn__error_set(err, CAIRN_EINVAL, "%s: \"stdin\" must name one of its inputs",
                             where);
    if (!(r->stdin_name = dup_n(json_string_value(in), json_string_length(in))))
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  return CAIRN_OK;
}

cairn_status cairn__task_run_merge(const cairn__task_run *def, const cairn__task_run *task,
                                  cairn__task_run *out, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  for (int i = 0; i < CAIRN_LIMIT_COUNT; i++)
    out->limits[i] = task->limits[i] ? task->limits[i] : def->limits[i];
  for (uint32_t i = 0; st == CAIRN_OK && i < def->nenv; i++)
    st = env_set(out, def->env_names[i], def->env_values[i], "job", err);
  for (uint32_t i = 0; st == CAIRN_OK && i < task->nenv; i++)
    st = env_set(out, task->env_names[i], task->env_values[i], "task", err);
  out->network = task->network ? task->network : def->network;
  const char *in = task->stdin_name ? task->stdin_name : def->stdin_name;
  if (st == CAIRN_OK && in && !(out->stdin_name = dup_n(in, strlen(in))))
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  return st;
}

cairn_status cairn__task_run_ceiling(cairn__task_run *r, const int64_t ceiling[CAIRN_LIMIT_COUNT],
                                    const char *where, const char *const *flag, cairn_error *err) {
  for (int i = 0; i < CAIRN_LIMIT_COUNT; i++) {
    if (!ceiling[i])
      continue;
    if (r->limits[i] > ceiling[i])
      return cairn__error_set(err, CAIRN_EINVAL,
                             "%s: limits.%s %lld exceeds the server's ceiling of %lld%s%s%s",
                             where, limit_names[i], (long long)r->limits[i],
                             (long long)ceiling[i], flag && flag[i] ? " (" : "",
                             flag && flag[i] ? flag[i] : "", flag && flag[i] ? ")" : "");
    if (!r->limits[i])
      r->limits[i] = ceiling[i];
  }
  return CAIRN_OK;
}

json_t *cairn__task_run_json(const cairn__task_run *r) {
  json_t *o = json_object(), *lim = json_object(), *env = json_object();
  int bad = !o || !lim || !env;
  for (int i = 0; !bad && i < CAIRN_LIMIT_COUNT; i++)
    if (r->limits[i])
      bad = json_object_set_new(lim, limit_names[i], json_integer(r->limits[i])) != 0;
  for (uint32_t i = 0; !bad && i < r->nenv; i++)
    bad = json_object_set_new(env, r->env_names[i], json_string(r->env_values[i])) != 0;
  if (!bad && json_object_size(lim))
    bad = json_object_set(o, "limits", lim) != 0;
  if (!bad && json_object_size(env))
    bad = json_object_set(o, "env", env) != 0;
  if (!bad && r->stdin_name)
    bad = json_object_set_new(o, "stdin", json_string(r->stdin_name)) != 0;
  if (!bad && r->network > 0)
    bad = json_object_set_new(o, "network", json_true()) != 0;
  json_decref(lim);
  json_decref(env);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

uint64_t cairn__task_output_budget(const cairn__task_run *r, uint64_t cap) {
  int64_t mib = r ? r->limits[CAIRN_LIMIT_OUTPUT] : 0;
  if (mib <= 0 || (uint64_t)mib > (cap >> 20))
    return cap;
  return (uint64_t)mib << 20;
}

/* Reads "PREFIX N" with N from 1 to max, no leading zero. */
static int numbered(const char *s, const char *prefix, int max) {
  size_t n = strlen(prefix);
  if (strncmp(s, prefix, n) != 0 || s[n] < '1' || s[n] > '9')
    return 0;
  long v = 0;
  for (const char *p = s + n; *p; p++) {
    if (*p < '0' || *p > '9' || p - (s + n) >= 3)
      return 0;
    v = v * 10 + (*p - '0');
  }
  return v <= max;
}

int cairn__reason_kind(const char *s) {
  if (!s)
    return -1;
  for (int i = 0; i < CAIRN_LIMIT_COUNT; i++)
    if (strcmp(s, limit_reasons[i]) == 0)
      return i;
  if (numbered(s, "signal ", 64))
    return CAIRN_LIMIT_COUNT;
  if (numbered(s, "exit ", 255))
    return CAIRN_LIMIT_COUNT + 1;
  if (strcmp(s, CAIRN_REASON_APP_SIGNATURE) == 0)
    return CAIRN_LIMIT_COUNT + 2;
  return -1;
}

int cairn__reason_valid(const char *s) { return cairn__reason_kind(s) >= 0; }

void cairn__reason_of_exit(int exit_status, char buf[CAIRN_REASON_MAX]) {
  if (exit_status == 0)
    buf[0] = '\0';
  else
    snprintf(buf, CAIRN_REASON_MAX, "exit %d", exit_status > 0 && exit_status < 256 ? exit_status : 255);
}
