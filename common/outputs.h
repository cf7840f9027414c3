/* outputs.h — the output files a task declares (docs/jobs.md, "Outputs"):
 * patterns with a cap per file, the checks on a file's path, and the digest
 * a result is compared by under replication (docs/protocol.md, "Output
 * files"). Pure functions over plain structs; shared by master, worker and
 * CLI. This is the one home of the output caps. */
#ifndef CAIRN_OUTPUTS_H
#define CAIRN_OUTPUTS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Files one result may name, patterns one task may declare. */
#define CAIRN_MAX_OUTPUT_FILES     256u
#define CAIRN_MAX_OUTPUT_PATTERNS  64u
/* Length of an output file's name (a path relative to the task directory). */
#define CAIRN_MAX_OUTPUT_NAME      1024u
/* The tail of standard error kept with every result. */
#define CAIRN_STDERR_TAIL          (64u * 1024u)
/* A pattern's cap per file when it names none, and the master's default
 * server-wide cap per file (cairn-server --max-output-file-mib). */
#define CAIRN_DEFAULT_OUTPUT_MIB   1024
#define CAIRN_MAX_OUTPUT_MIB       (1024 * 1024) /* 1 TiB: the largest max_mib */
/* Bytes one lease may upload in all: this many times the per-file cap. */
#define CAIRN_OUTPUT_LEASE_FACTOR  4

/* One declared pattern: a file name, or a glob (fnmatch with FNM_PATHNAME
 * and FNM_PERIOD: '*' and '?' match neither '/' nor a leading '.'). */
typedef struct cairn__output_pattern {
  char *name;
  int64_t max_mib;  /* cap per file */
  int glob;         /* name has '*', '?' or '['; else the file is required */
} cairn__output_pattern;

typedef struct cairn__output_patterns {
  cairn__output_pattern *v;
  uint32_t n;
} cairn__output_patterns;

/* One file of a result. */
typedef struct cairn__output_file {
  char name[CAIRN_MAX_OUTPUT_NAME + 1];
  char sha256[65];
  int64_t size;
} cairn__output_file;

/* 1 when name can be an output path: non-empty, at most
 * CAIRN_MAX_OUTPUT_NAME bytes, relative (no leading '/'), no "." or ".."
 * component, no empty component ("a//b", trailing '/'), no control byte. */
int cairn__output_name_ok(const char *name);

/* Reads an "outputs" array (entries NAME or {"name": N, "max_mib": M}) into
 * *out (replacing nothing: *out must be empty). where names the place in
 * messages ("task \"x\"", "job"). CAIRN_EINVAL naming the entry for a name
 * that is no output path, a malformed glob, a duplicate, max_mib outside
 * 1 .. CAIRN_MAX_OUTPUT_MIB, more than CAIRN_MAX_OUTPUT_PATTERNS. */
cairn_status cairn__outputs_parse(const json_t *arr, const char *where,
                                 cairn__output_patterns *out, cairn_error *err);
/* A deep copy (0, or -1 out of memory). */
int cairn__outputs_copy(const cairn__output_patterns *from, cairn__output_patterns *to);
void cairn__output_specs_free(cairn__output_patterns *p);
/* The patterns as a new JSON array of {"name", "max_mib"} (NULL: out of
 * memory); cairn__outputs_parse reads it back. */
json_t *cairn__outputs_json(const cairn__output_patterns *p);
/* The first pattern that name matches, or -1. */
int cairn__outputs_match(const cairn__output_patterns *p, const char *name);
/* The largest cap per file among the patterns, in bytes (0 when none). */
int64_t cairn__outputs_max_bytes(const cairn__output_patterns *p);

/* The digest results are compared by: the stdout digest alone when n == 0
 * (as results without files always were), else sha256 of the stdout digest
 * (64 hex) followed by "NAME\0SHA256\n" for each file in byte order of
 * names. files is sorted in place. */
void cairn__digest_result_files(const char stdout_digest[65], cairn__output_file *files, size_t n,
                         char out[65]);

#endif
