/* projfile.c — --project flags and --config files (projfile.h). */
#include "worker/projfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "worker/fsutil.h"

#define LINE_MAX_CHARS 4096

int cairn__first_line(const char *path, char *out, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  int ok = fgets(out, (int)cap, f) != NULL;
  fclose(f);
  if (!ok)
    return -1;
  size_t n = strcspn(out, "\r\n");
  if (n == strlen(out) && n == cap - 1) /* no end of line within the cap */
    return -1;
  out[n] = '\0';
  while (n && (out[n - 1] == ' ' || out[n - 1] == '\t'))
    out[--n] = '\0';
  return n && n <= CAIRN__CODE_MAX ? 0 : -1;
}

/* A copy of s[0..n) owned by l; NULL when out of memory. */
static char *keep(cairn__projlist *l, const char *s, size_t n) {
  char *d = l->nowned < sizeof l->owned / sizeof l->owned[0] ? strndup(s, n) : NULL;
  if (d)
    l->owned[l->nowned++] = d;
  return d;
}

/* Parses a share, 0 to CAIRN__MAX_SHARE, into *p (0: a backup project). */
static int parse_share(const char *s, cairn_worker_project *p) {
  char *end = NULL;
  if (!*s || *s == '-' || *s == '+')
    return -1;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || *end || v > CAIRN__MAX_SHARE)
    return -1;
  p->share = (unsigned)v;
  p->backup = v == 0;
  return 0;
}

/* The next project slot of l, zeroed; NULL when it is full. */
static cairn_worker_project *next(cairn__projlist *l) {
  if (l->n >= CAIRN__MAX_PROJECTS)
    return NULL;
  memset(&l->v[l->n], 0, sizeof l->v[l->n]);
  return &l->v[l->n];
}

cairn_status cairn__projlist_flag(cairn__projlist *l, const char *arg, cairn_error *err) {
  cairn_worker_project *p = next(l);
  if (!p)
    return cairn__error_set(err, CAIRN_EINVAL, "at most %d projects", CAIRN__MAX_PROJECTS);
  const char *eq = strrchr(arg, '=');
  size_t n = strlen(arg);
  if (eq) { /* URL=SHARE */
    if (parse_share(eq + 1, p) != 0)
      return cairn__error_set(err, CAIRN_EINVAL, "--project %.200s: the share must be from 0 to "
                              "%u", arg, CAIRN__MAX_SHARE);
    n = (size_t)(eq - arg);
  }
  if (!(p->server_url = keep(l, arg, n)))
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  l->n++;
  return CAIRN_OK;
}

/* Reads a key or code from the file named by value into an owned string. */
static const char *from_file(cairn__projlist *l, const char *value, const char *what,
                             char *why, size_t cap) {
  char code[CAIRN__CODE_MAX + 2];
  if (cairn__first_line(value, code, sizeof code) != 0) {
    snprintf(why, cap, "%s %.200s holds no %s on its first line", what, value,
             strcmp(what, "invitation-file") == 0 ? "code" : "key");
    return NULL;
  }
  const char *s = keep(l, code, strlen(code));
  if (!s)
    snprintf(why, cap, "out of memory, or too many settings");
  return s;
}

/* Applies one "key=value" word to p. NULL, or the problem (in why). */
static const char *option(cairn__projlist *l, cairn_worker_project *p, const char *word,
                          char *why, size_t cap) {
  const char *eq = strchr(word, '=');
  const char *v = eq ? eq + 1 : "";
  size_t klen = eq ? (size_t)(eq - word) : strlen(word);
  if (!eq || !*v) {
    snprintf(why, cap, "\"%.100s\" is not key=value", word);
    return why;
  }
  if (klen == 5 && strncmp(word, "share", 5) == 0) {
    if (parse_share(v, p) != 0) {
      snprintf(why, cap, "share must be from 0 to %u", CAIRN__MAX_SHARE);
      return why;
    }
  } else if (klen == 11 && strncmp(word, "project-key", 11) == 0) {
    if (!(p->project_key = keep(l, v, strlen(v))))
      goto oom;
  } else if (klen == 11 && strncmp(word, "account-key", 11) == 0) {
    if (!(p->account_key = keep(l, v, strlen(v))))
      goto oom;
  } else if (klen == 16 && strncmp(word, "account-key-file", 16) == 0) {
    if (!(p->account_key = from_file(l, v, "account-key-file", why, cap)))
      return why;
  } else if (klen == 15 && strncmp(word, "invitation-file", 15) == 0) {
    if (!(p->invitation = from_file(l, v, "invitation-file", why, cap)))
      return why;
  } else {
    snprintf(why, cap, "unknown setting \"%.*s\" (share, project-key, account-key, "
             "account-key-file, invitation-file)", (int)(klen > 64 ? 64 : klen), word);
    return why;
  }
  return NULL;
oom:
  snprintf(why, cap, "out of memory, or too many settings");
  return why;
}

/* Parses one line (NUL-terminated, modified) into l. NULL, or the problem. */
static const char *line(cairn__projlist *l, char *text, char *why, size_t cap) {
  char *save = NULL, *word = strtok_r(text, " \t", &save);
  if (!word || word[0] == '#')
    return NULL;
  if (strcmp(word, "project") != 0) {
    snprintf(why, cap, "a line starts with \"project\", not \"%.64s\"", word);
    return why;
  }
  cairn_worker_project *p = next(l);
  char *url = strtok_r(NULL, " \t", &save);
  if (!p) {
    snprintf(why, cap, "at most %d projects", CAIRN__MAX_PROJECTS);
    return why;
  }
  if (!url) {
    snprintf(why, cap, "project without a URL");
    return why;
  }
  if (!(p->server_url = keep(l, url, strlen(url)))) {
    snprintf(why, cap, "out of memory");
    return why;
  }
  while ((word = strtok_r(NULL, " \t", &save)) != NULL)
    if (option(l, p, word, why, cap))
      return why;
  l->n++;
  return NULL;
}

cairn_status cairn__projlist_read(cairn__projlist *l, const char *path, cairn_error *err) {
  cairn__buf text;
  cairn_status rc = cairn__read_file(path, CAIRN__PROJFILE_MAX, &text, err);
  if (rc != CAIRN_OK)
    return rc == CAIRN_ENOTFOUND ? CAIRN_EIO : rc;
  size_t n0 = l->n, start = 0, lineno = 0;
  const char *data = text.data ? text.data : "";
  char why[400];
  for (size_t i = 0; i <= text.len && rc == CAIRN_OK; i++) {
    if (i < text.len && data[i] != '\n')
      continue;
    lineno++;
    size_t len = i - start;
    char buf[LINE_MAX_CHARS + 1];
    if (len > LINE_MAX_CHARS)
      rc = cairn__error_set(err, CAIRN_EINVAL, "%s:%zu: line over %d characters", path, lineno,
                            LINE_MAX_CHARS);
    else if (len && memchr(data + start, '\0', len))
      rc = cairn__error_set(err, CAIRN_EINVAL, "%s:%zu: a NUL byte", path, lineno);
    else {
      memcpy(buf, data + start, len);
      buf[len] = '\0';
      buf[strcspn(buf, "\r")] = '\0';
      if (line(l, buf, why, sizeof why))
        rc = cairn__error_set(err, CAIRN_EINVAL, "%s:%zu: %s", path, lineno, why);
    }
    start = i + 1;
  }
  cairn__buf_free(&text);
  if (rc == CAIRN_OK && l->n == n0)
    rc = cairn__error_set(err, CAIRN_EINVAL, "%s: no project line", path);
  if (rc != CAIRN_OK)
    l->n = n0; /* its strings stay owned until free */
  return rc;
}

void cairn__projlist_free(cairn__projlist *l) {
  for (size_t i = 0; i < l->nowned; i++)
    free(l->owned[i]);
  memset(l, 0, sizeof *l);
}
