/* appsig.c — manifests, keys and signatures of app versions (appsig.h):
 * Ed25519 through libsodium (crypto_sign_detached, crypto_sign_verify_detached,
 * crypto_sign_keypair), base64 through common/base64.h. */
#include "common/appsig.h"

#include <ctype.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "common/base64.h"
#include "common/sha256.h"

static int chars_ok(const char *s, size_t max, const char *extra, int lower_only) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > max)
    return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
             (!lower_only && ch >= 'A' && ch <= 'Z') || (ch && strchr(extra, ch));
    if (!ok)
      return 0;
  }
  return 1;
}

int cairn__app_name_ok(const char *s) {
  return chars_ok(s, CAIRN_APP_MAX_NAME, "._+-", 0) && s[0] != '-' && strcmp(s, ".") != 0 &&
         strcmp(s, "..") != 0;
}

int cairn__app_version_ok(const char *s) {
  return chars_ok(s, CAIRN_APP_MAX_VERSION, "._+-", 0);
}

int cairn__app_platform_ok(const char *s) { return chars_ok(s, CAIRN_APP_MAX_PLATFORM, "_-", 1); }

void cairn__app_platform(char buf[CAIRN_APP_MAX_PLATFORM + 1]) {
  struct utsname u;
  if (uname(&u) != 0)
    snprintf(u.sysname, sizeof u.sysname, "unknown"), snprintf(u.machine, sizeof u.machine, "unknown");
  snprintf(buf, CAIRN_APP_MAX_PLATFORM + 1, "%.15s-%.15s", u.sysname, u.machine);
  for (char *p = buf; *p; p++)
    *p = (char)tolower((unsigned char)*p);
  for (char *p = buf; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
      *p = '_';
}

/* ---- manifests ---- */

static cairn_status bad(cairn_error *err, const char *what) {
  return cairn__error_set(err, CAIRN_EINVAL, "manifest: %s", what);
}

static int only_keys(json_t *o, const char *const *keys) {
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v) {
    int known = 0;
    for (size_t i = 0; keys[i]; i++)
      known |= strcmp(k, keys[i]) == 0;
    if (!known)
      return 0;
  }
  return 1;
}

/* Copies o[key], a string that ok() accepts, into dst (cap bytes). */
static int get_name(json_t *o, const char *key, int (*ok)(const char *), char *dst, size_t cap) {
  const char *s = json_string_value(json_object_get(o, key));
  if (!s || !ok(s) || strlen(s) >= cap)
    return -1;
  memcpy(dst, s, strlen(s) + 1);
  return 0;
}

static cairn_status parse_file(json_t *f, size_t i, cairn__app_manifest *m, cairn_error *err) {
  static const char *const keys[] = {"name", "size", "sha256", "exec", NULL};
  cairn__app_file *x = &m->files[i];
  char what[96];
  if (!json_is_object(f) || !only_keys(f, keys)) {
    snprintf(what, sizeof what, "files[%zu] must be an object of name, size, sha256, exec", i);
    return bad(err, what);
  }
  json_t *size = json_object_get(f, "size"), *exec = json_object_get(f, "exec");
  const char *sha = json_string_value(json_object_get(f, "sha256"));
  if (get_name(f, "name", cairn__app_name_ok, x->name, sizeof x->name) != 0) {
    snprintf(what, sizeof what, "files[%zu].name must be a file name ([A-Za-z0-9._+-])", i);
    return bad(err, what);
  }
  if (!json_is_integer(size) || json_integer_value(size) < 0 ||
      (uint64_t)json_integer_value(size) > ((uint64_t)1 << 40)) {
    snprintf(what, sizeof what, "files[%zu].size must be a byte count", i);
    return bad(err, what);
  }
  if (!sha || !cairn__sha256_valid_hex(sha)) {
    snprintf(what, sizeof what, "files[%zu].sha256 must be 64 lowercase hex digits", i);
    return bad(err, what);
  }
  if (!json_is_boolean(exec) || json_is_true(exec) != (i == 0)) {
    snprintf(what, sizeof what, "files[%zu].exec must be %s", i,
             i == 0 ? "true (the first file is the executable)" : "false");
    return bad(err, what);
  }
  x->size = (uint64_t)json_integer_value(size);
  memcpy(x->sha256, sha, 65);
  x->exec = i == 0;
  for (size_t k = 0; k < i; k++)
    if (strcmp(m->files[k].name, x->name) == 0) {
      snprintf(what, sizeof what, "file name \"%s\" appears twice", x->name);
      return bad(err, what);
    }
  return CAIRN_OK;
}

cairn_status cairn__app_manifest_parse(const char *text, size_t len, cairn__app_manifest *m,
                                       cairn_error *err) {
  static const char *const keys[] = {"name", "version", "platform", "files", NULL};
  memset(m, 0, sizeof *m);
  if (len > CAIRN_APP_MAX_MANIFEST)
    return cairn__error_set(err, CAIRN_EINVAL, "manifest: over %u bytes", CAIRN_APP_MAX_MANIFEST);
  json_error_t je;
  json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (!o)
    return cairn__error_set(err, CAIRN_EINVAL, "manifest: malformed JSON at line %d: %s", je.line,
                           je.text);
  cairn_status st = CAIRN_OK;
  json_t *files = json_object_get(o, "files");
  if (!json_is_object(o) || !only_keys(o, keys))
    st = bad(err, "must be an object of name, version, platform, files");
  else if (get_name(o, "name", cairn__app_name_ok, m->name, sizeof m->name))
    st = bad(err, "name must be an app name ([A-Za-z0-9._+-], 1 to 64)");
  else if (get_name(o, "version", cairn__app_version_ok, m->version, sizeof m->version))
    st = bad(err, "version must be 1 to 32 of [A-Za-z0-9._+-]");
  else if (get_name(o, "platform", cairn__app_platform_ok, m->platform, sizeof m->platform))
    st = bad(err, "platform must be 1 to 32 of [a-z0-9_-] (\"linux-x86_64\")");
  else if (!json_is_array(files) || json_array_size(files) == 0 ||
           json_array_size(files) > CAIRN_APP_MAX_FILES)
    st = bad(err, "files must be an array of 1 to 64 files");
  for (size_t i = 0; st == CAIRN_OK && i < json_array_size(files); i++)
    st = parse_file(json_array_get(files, i), i, m, err);
  if (st == CAIRN_OK)
    m->nfiles = json_array_size(files);
  json_decref(o);
  return st;
}

char *cairn__app_manifest_text(const cairn__app_manifest *m) {
  json_t *files = json_array();
  for (size_t i = 0; files && i < m->nfiles; i++) {
    const cairn__app_file *f = &m->files[i];
    if (json_array_append_new(files, json_pack("{s:s, s:I, s:s, s:b}", "name", f->name, "size",
                                               (json_int_t)f->size, "sha256", f->sha256, "exec",
                                               f->exec))) {
      json_decref(files);
      return NULL;
    }
  }
  json_t *o = files ? json_pack("{s:s, s:s, s:s, s:o}", "name", m->name, "version", m->version,
                                "platform", m->platform, "files", files)
                    : NULL;
  char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(o);
  return s;
}

/* ---- keys and signatures ---- */

/* Decodes exactly n bytes of base64 text s (whitespace around it allowed). */
static int decode_exact(const char *s, uint8_t *out, size_t n) {
  while (*s && isspace((unsigned char)*s))
    s++;
  size_t len = strlen(s);
  while (len && isspace((unsigned char)s[len - 1]))
    len--;
  uint8_t buf[128];
  size_t got = 0;
  if (len > 4 * sizeof buf / 3 || cairn__base64_decode(s, len, buf, sizeof buf, &got) != 0 ||
      got != n)
    return -1;
  memcpy(out, buf, n);
  sodium_memzero(buf, sizeof buf);
  return 0;
}

cairn_status cairn__app_pubkey_parse(const char *b64, uint8_t pk[32], cairn_error *err) {
  if (decode_exact(b64, pk, crypto_sign_PUBLICKEYBYTES) != 0)
    return cairn__error_set(err, CAIRN_EINVAL,
                           "not an Ed25519 public key (44 base64 characters, as cairn app "
                           "keygen prints)");
  return CAIRN_OK;
}

cairn_status cairn__app_pubkey_load(const char *text_or_path, uint8_t pk[32], cairn_error *err) {
  if (cairn__app_pubkey_parse(text_or_path, pk, NULL) == CAIRN_OK)
    return CAIRN_OK;
  FILE *f = fopen(text_or_path, "r");
  if (!f)
    return cairn__error_set(err, CAIRN_EINVAL,
                           "\"%.200s\" is neither a public key nor a readable key file",
                           text_or_path);
  char line[256] = "";
  size_t n = fread(line, 1, sizeof line - 1, f);
  fclose(f);
  line[n] = '\0';
  if (cairn__app_pubkey_parse(line, pk, err) != CAIRN_OK)
    return cairn__error_set(err, CAIRN_EINVAL, "%.200s: not an Ed25519 public key file",
                           text_or_path);
  return CAIRN_OK;
}

cairn_status cairn__app_keygen(char sk_b64[CAIRN_APP_SECKEY_B64 + 1],
                               char pk_b64[CAIRN_APP_PUBKEY_B64 + 1], cairn_error *err) {
  uint8_t pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
  if (cairn__sodium_once() != 0 || crypto_sign_keypair(pk, sk) != 0)
    return cairn__error_set(err, CAIRN_EIO, "libsodium could not make a key pair");
  cairn__base64_encode(sk, sizeof sk, sk_b64);
  cairn__base64_encode(pk, sizeof pk, pk_b64);
  sodium_memzero(sk, sizeof sk);
  return CAIRN_OK;
}

cairn_status cairn__app_sign(const char *sk_b64, const void *msg, size_t len,
                             char sig_b64[CAIRN_APP_SIG_B64 + 1], cairn_error *err) {
  uint8_t sk[crypto_sign_SECRETKEYBYTES], sig[crypto_sign_BYTES];
  if (cairn__sodium_once() != 0)
    return cairn__error_set(err, CAIRN_EIO, "libsodium could not start");
  if (decode_exact(sk_b64, sk, sizeof sk) != 0)
    return cairn__error_set(err, CAIRN_EINVAL,
                           "not an Ed25519 secret key (88 base64 characters, as cairn app "
                           "keygen writes)");
  crypto_sign_detached(sig, NULL, msg, len, sk);
  sodium_memzero(sk, sizeof sk);
  cairn__base64_encode(sig, sizeof sig, sig_b64);
  return CAIRN_OK;
}

cairn_status cairn__app_verify(const uint8_t pk[32], const void *msg, size_t len,
                               const char *sig_b64, cairn_error *err) {
  uint8_t sig[crypto_sign_BYTES];
  if (cairn__sodium_once() != 0)
    return cairn__error_set(err, CAIRN_EIO, "libsodium could not start");
  if (!sig_b64 || decode_exact(sig_b64, sig, sizeof sig) != 0)
    return cairn__error_set(err, CAIRN_EINVAL, "the signature is not 88 base64 characters");
  if (crypto_sign_verify_detached(sig, msg, len, pk) != 0)
    return cairn__error_set(err, CAIRN_EFORBIDDEN,
                           "the signature does not verify with the project's key");
  return CAIRN_OK;
}
