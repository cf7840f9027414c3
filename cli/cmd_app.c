/* cmd_app.c — `cairn app`: the project's signed app versions (docs/apps.md).
 * keygen makes the Ed25519 key pair, on the operator's machine; publish
 * builds a version's manifest, signs it there and uploads the files and
 * the signed manifest; list and retire ask the master. The secret key never
 * travels. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "common/appsig.h"
#include "common/termsafe.h"

static const char app_usage[] =
  "usage: cairn app keygen --out FILE\n"
  "       cairn app publish NAME VERSION PATH... --platform PLATFORM --key FILE\n"
  "       cairn app list\n"
  "       cairn app retire NAME VERSION\n"
  "The project's signed app versions (docs/apps.md).\n"
  "  keygen   makes an Ed25519 key pair: the secret key in FILE (mode 0600; keep it\n"
  "           off the master), the public key in FILE.pub; prints the public key,\n"
  "           which the master takes as --app-key and workers as --project-key\n"
  "  publish  uploads PATH... (the first is the executable) and a manifest of their\n"
  "           names, sizes and SHA-256, signed with the secret key FILE; PLATFORM\n"
  "           defaults to this machine's (linux-x86_64, ...)\n"
  "  list     the versions the master holds\n"
  "  retire   no new task uses that version (running ones finish)\n"
  "publish, list and retire take --server URL and --token/--token-file (or\n"
  "$CAIRN_SERVER and $CAIRN_ADMIN_TOKEN).";

/* Writes text and a newline to path with mode, refusing to replace a file. */
static int write_new(const char *path, const char *text, mode_t mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0)
    return cairn__cli_fail("cannot create %s: %s", path, strerror(errno));
  size_t n = strlen(text);
  int bad = write(fd, text, n) != (ssize_t)n || write(fd, "\n", 1) != 1 || fsync(fd) != 0;
  bad |= close(fd) != 0;
  if (bad) {
    unlink(path);
    return cairn__cli_fail("cannot write %s", path);
  }
  return 0;
}

static int keygen(int argc, char **argv) {
  const char *out = NULL;
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
      out = argv[++i];
    else
      return cairn__cli_fail("app keygen: unexpected \"%s\" (--out FILE)", argv[i]);
  if (!out)
    return cairn__cli_fail("app keygen: --out FILE is required");
  char sk[CAIRN_APP_SECKEY_B64 + 1], pk[CAIRN_APP_PUBKEY_B64 + 1], pub[4096];
  cairn_error err = {0};
  if (snprintf(pub, sizeof pub, "%s.pub", out) >= (int)sizeof pub)
    return cairn__cli_fail("app keygen: path too long");
  if (cairn__app_keygen(sk, pk, &err) != CAIRN_OK)
    return cairn__cli_fail("app keygen: %s", err.text);
  int rc = write_new(out, sk, 0600);
  memset(sk, 0, sizeof sk);
  if (rc || (rc = write_new(pub, pk, 0644))) {
    if (!rc)
      unlink(out);
    return 1;
  }
  printf("%s\n", pk);
  return 0;
}

/* The secret key's text from path (which must not be readable by others). */
static int read_secret(const char *path, char sk[CAIRN_APP_SECKEY_B64 + 8]) {
  struct stat st;
  FILE *f = fopen(path, "r");
  if (!f)
    return cairn__cli_fail("--key %s: %s", path, strerror(errno));
  if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077))
    fprintf(stderr, "cairn: warning: %s is readable by others (chmod 600 it)\n", path);
  size_t n = fread(sk, 1, CAIRN_APP_SECKEY_B64 + 7, f);
  fclose(f);
  sk[n] = '\0';
  return 0;
}

/* Fills m's files from paths, uploading each. */
static int upload_files(cairn__http *h, char **paths, size_t n, cairn__app_manifest *m) {
  for (size_t i = 0; i < n; i++) {
    cairn__app_file *f = &m->files[i];
    char *copy = strdup(paths[i]);
    snprintf(f->name, sizeof f->name, "%s", copy ? basename(copy) : "");
    free(copy);
    if (!cairn__app_name_ok(f->name))
      return cairn__cli_fail("%s: its file name must be 1 to 64 of [A-Za-z0-9._+-]", paths[i]);
    long long size = 0;
    if (cairn__client_upload(h, paths[i], f->name, f->sha256, &size))
      return 1;
    f->size = (uint64_t)size;
    f->exec = i == 0;
  }
  m->nfiles = n;
  return 0;
}

static int publish(int argc, char **argv, cairn__client_opts *o) {
  const char *key = NULL, *pos[2 + CAIRN_APP_MAX_FILES];
  char platform[CAIRN_APP_MAX_PLATFORM + 1];
  size_t npos = 0;
  cairn__app_platform(platform);
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--key") == 0 && i + 1 < argc)
      key = argv[++i];
    else if (strcmp(argv[i], "--platform") == 0 && i + 1 < argc)
      snprintf(platform, sizeof platform, "%s", argv[++i]);
    else if (npos < sizeof pos / sizeof *pos)
      pos[npos++] = argv[i];
    else
      return cairn__cli_fail("app publish: at most %u files", CAIRN_APP_MAX_FILES);
  }
  if (!key || npos < 3)
    return cairn__cli_fail("app publish: NAME VERSION PATH... and --key FILE are required");
  cairn__app_manifest *m = calloc(1, sizeof *m);
  if (!m)
    return cairn__cli_fail("out of memory");
  int rc = 1;
  char sk[CAIRN_APP_SECKEY_B64 + 8], sig[CAIRN_APP_SIG_B64 + 1];
  snprintf(m->name, sizeof m->name, "%s", pos[0]);
  snprintf(m->version, sizeof m->version, "%s", pos[1]);
  snprintf(m->platform, sizeof m->platform, "%s", platform);
  if (!cairn__app_name_ok(pos[0]) || strlen(pos[0]) > CAIRN_APP_MAX_NAME)
    return free(m), cairn__cli_fail("app publish: \"%s\" is not an app name", pos[0]);
  if (!cairn__app_version_ok(pos[1]) || !cairn__app_platform_ok(platform))
    return free(m), cairn__cli_fail("app publish: bad version \"%s\" or platform \"%s\"", pos[1],
                                    platform);
  if (read_secret(key, sk))
    return free(m), 1;
  cairn__http *h = cairn__client_connect(o);
  char *text = NULL;
  cairn_error err = {0};
  json_t *body = NULL, *resp = NULL;
  if (!h || upload_files(h, (char **)pos + 2, npos - 2, m))
    goto out;
  if (!(text = cairn__app_manifest_text(m))) {
    cairn__cli_fail("out of memory");
    goto out;
  }
  if (cairn__app_sign(sk, text, strlen(text), sig, &err) != CAIRN_OK) {
    cairn__cli_fail("--key %s: %s", key, err.text);
    goto out;
  }
  body = json_pack("{s:s, s:s}", "manifest", text, "signature", sig);
  char *b = body ? json_dumps(body, JSON_COMPACT) : NULL;
  long st = b ? cairn__client_json(h, "POST", "/v1/apps", b, &resp, 0) : -1;
  free(b);
  if (st == 200 || st == 201) {
    printf("%s %s %s: %s (%zu file%s)\n", m->name, m->version, m->platform,
           st == 201 ? "published" : "published already", m->nfiles, m->nfiles == 1 ? "" : "s");
    rc = 0;
  }
out:
  memset(sk, 0, sizeof sk);
  json_decref(body);
  json_decref(resp);
  free(text);
  free(m);
  cairn__http_delete(h);
  return rc;
}

static int list(cairn__client_opts *o) {
  cairn__http *h = cairn__client_connect(o);
  json_t *resp = NULL;
  if (!h || cairn__client_json(h, "GET", "/v1/apps", NULL, &resp, 0) != 200) {
    cairn__http_delete(h);
    return 1;
  }
  size_t i;
  json_t *a;
  printf("%-20s %-12s %-16s %5s %12s %s\n", "APP", "VERSION", "PLATFORM", "FILES", "BYTES",
         "STATE");
  json_array_foreach(json_object_get(resp, "apps"), i, a) {
    char n[80], v[40], p[40];
    cairn__termsafe(json_string_value(json_object_get(a, "name")), n, sizeof n);
    cairn__termsafe(json_string_value(json_object_get(a, "version")), v, sizeof v);
    cairn__termsafe(json_string_value(json_object_get(a, "platform")), p, sizeof p);
    printf("%-20s %-12s %-16s %5lld %12lld %s\n", n, v, p,
           (long long)json_integer_value(json_object_get(a, "files")),
           (long long)json_integer_value(json_object_get(a, "bytes")),
           json_is_true(json_object_get(a, "retired")) ? "retired" : "live");
  }
  json_decref(resp);
  cairn__http_delete(h);
  return 0;
}

static int retire(int argc, char **argv, cairn__client_opts *o) {
  if (argc != 4 || !cairn__app_name_ok(argv[2]) || !cairn__app_version_ok(argv[3]))
    return cairn__cli_fail("app retire: NAME VERSION");
  char path[256];
  snprintf(path, sizeof path, "/v1/apps/%s/%s", argv[2], argv[3]);
  cairn__http *h = cairn__client_connect(o);
  json_t *resp = NULL;
  long st = h ? cairn__client_json(h, "PATCH", path, "{\"retired\": true}", &resp, 0) : -1;
  json_decref(resp);
  cairn__http_delete(h);
  if (st != 200)
    return 1;
  printf("%s %s: retired\n", argv[2], argv[3]);
  return 0;
}

int cairn__cmd_app(int argc, char **argv) {
  cairn__client_opts o = {0};
  if (argc < 2 || cairn__cli_wants_help(argc, argv)) {
    puts(app_usage);
    return argc < 2;
  }
  if (strcmp(argv[1], "keygen") == 0)
    return keygen(argc, argv);
  if (cairn__client_parse(&argc, argv, &o))
    return 1;
  if (strcmp(argv[1], "publish") == 0)
    return publish(argc, argv, &o);
  if (strcmp(argv[1], "list") == 0 && argc == 2)
    return list(&o);
  if (strcmp(argv[1], "retire") == 0)
    return retire(argc, argv, &o);
  return cairn__cli_fail("app: unknown \"%s\" (keygen, publish, list, retire)", argv[1]);
}
