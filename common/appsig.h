/* appsig.h — signed app versions (docs/apps.md): the manifest an operator
 * signs, its Ed25519 signature (RFC 8032, libsodium's crypto_sign_detached)
 * and the keys, shared by the CLI (keygen, publish), the master (which
 * refuses a version its --app-key does not verify) and the worker (which
 * verifies a version with its --project-key before running anything).
 *
 * A manifest is the JSON text of one object, signed as the exact bytes sent:
 *
 *   {"name": "blast", "version": "2.1", "platform": "linux-x86_64",
 *    "files": [{"name": "blast", "size": 81234, "sha256": "…", "exec": true},
 *              {"name": "db.dat", "size": 1024, "sha256": "…", "exec": false}]}
 *
 * Exactly its first file is the executable. Keys and signatures travel as
 * standard base64 (RFC 4648 §4): a public key 44 characters, a secret key
 * (libsodium's 64 bytes: seed and public key) 88, a signature 88.
 *
 * Pure functions over plain structs, but for the key pair's randomness.
 */
#ifndef CAIRN_APPSIG_H
#define CAIRN_APPSIG_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define CAIRN_APP_MAX_FILES     64u   /* files in one version */
#define CAIRN_APP_MAX_NAME      64u   /* an app's or a file's name, in bytes */
#define CAIRN_APP_MAX_VERSION   32u
#define CAIRN_APP_MAX_PLATFORM  32u
#define CAIRN_APP_MAX_MANIFEST  (24u * 1024u) /* the manifest's text, in bytes */
#define CAIRN_APP_PUBKEY_B64    44u   /* base64 characters of a public key */
#define CAIRN_APP_SECKEY_B64    88u
#define CAIRN_APP_SIG_B64       88u

typedef struct cairn__app_file {
  char name[CAIRN_APP_MAX_NAME + 1];
  uint64_t size;
  char sha256[65];
  int exec;
} cairn__app_file;

typedef struct cairn__app_manifest {
  char name[CAIRN_APP_MAX_NAME + 1];
  char version[CAIRN_APP_MAX_VERSION + 1];
  char platform[CAIRN_APP_MAX_PLATFORM + 1];
  cairn__app_file files[CAIRN_APP_MAX_FILES];
  size_t nfiles;
} cairn__app_manifest;

/* 1 when s is an app or file name: 1 to 64 of [A-Za-z0-9._+-], not "." or
 * "..", not starting with '-'. */
int cairn__app_name_ok(const char *s);
/* 1 when s is a version: 1 to 32 of [A-Za-z0-9._+-]. */
int cairn__app_version_ok(const char *s);
/* 1 when s is a platform: 1 to 32 of [a-z0-9_-] ("linux-x86_64"). */
int cairn__app_platform_ok(const char *s);

/* This host's platform, "OS-MACHINE" from uname(2) in lower case
 * ("linux-x86_64", "linux-aarch64"), into buf (CAIRN_APP_MAX_PLATFORM + 1). */
void cairn__app_platform(char buf[CAIRN_APP_MAX_PLATFORM + 1]);

/* Parses and checks a manifest's text (at most CAIRN_APP_MAX_MANIFEST
 * bytes): exactly the keys above, valid names, unique file names, the
 * first file and only it executable. CAIRN_EINVAL naming the problem. */
cairn_status cairn__app_manifest_parse(const char *text, size_t len, cairn__app_manifest *m,
                                       cairn_error *err);
/* The manifest's text for m (compact JSON, keys in the order above); a
 * malloc'd string, NULL out of memory. */
char *cairn__app_manifest_text(const cairn__app_manifest *m);

/* Decodes a base64 public key (exactly 32 bytes), with surrounding
 * whitespace allowed. CAIRN_EINVAL naming the problem. */
cairn_status cairn__app_pubkey_parse(const char *b64, uint8_t pk[32], cairn_error *err);
/* Reads a public key given as its base64 text or as the path of a file
 * holding it (a ".pub" file of cairn app keygen). */
cairn_status cairn__app_pubkey_load(const char *text_or_path, uint8_t pk[32], cairn_error *err);
/* Makes a key pair: the secret key's base64 in sk_b64, the public key's in
 * pk_b64. CAIRN_EIO when libsodium cannot start. */
cairn_status cairn__app_keygen(char sk_b64[CAIRN_APP_SECKEY_B64 + 1],
                               char pk_b64[CAIRN_APP_PUBKEY_B64 + 1], cairn_error *err);
/* Signs msg with a secret key in base64: the signature's base64 in sig_b64. */
cairn_status cairn__app_sign(const char *sk_b64, const void *msg, size_t len,
                             char sig_b64[CAIRN_APP_SIG_B64 + 1], cairn_error *err);
/* CAIRN_OK when sig_b64 is pk's signature of msg; CAIRN_EFORBIDDEN when it
 * is not ("the signature does not verify with the project's key"),
 * CAIRN_EINVAL when sig_b64 is not a signature at all. */
cairn_status cairn__app_verify(const uint8_t pk[32], const void *msg, size_t len,
                               const char *sig_b64, cairn_error *err);

#endif
