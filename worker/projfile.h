/* projfile.h — the projects a cairn-worker computes for, from its
 * --project flags and its --config file (docs/worker.md, "Several
 * projects"). Private to worker/ (and the cairn-worker program).
 *
 * A --project flag is URL or URL=SHARE. A --config file holds one project
 * a line (at most 64 KiB; blank lines and lines starting with '#' are
 * skipped):
 *
 *   project URL [share=N] [project-key=KEY|PATH] [account-key=KEY]
 *               [account-key-file=PATH] [invitation-file=PATH]
 *
 * SHARE and N are 0 (a backup project, asked only while no other has
 * work) to 1000000; without them 100. A file's value is its first line.
 * Paths are taken as given (relative to the working directory).
 */
#ifndef CAIRN_PROJFILE_H
#define CAIRN_PROJFILE_H

#include <stddef.h>

#include "cairn/worker.h"
#include "worker/project.h"

#define CAIRN__PROJFILE_MAX (64u * 1024u)
#define CAIRN__CODE_MAX 256 /* characters of a code or key read from a file */

typedef struct cairn__projlist {
  cairn_worker_project v[CAIRN__MAX_PROJECTS];
  size_t n;
  char *owned[CAIRN__MAX_PROJECTS * 8]; /* the strings v points to */
  size_t nowned;
} cairn__projlist;

/* Reads the first line of path (a code or key: at most CAIRN__CODE_MAX
 * characters, trailing blanks dropped) into out (cap > CAIRN__CODE_MAX).
 * 0, or -1 when it cannot be read or holds no such line. */
int cairn__first_line(const char *path, char *out, size_t cap);

/* Adds the project of a --project flag (copied). CAIRN_EINVAL naming the
 * problem. */
cairn_status cairn__projlist_flag(cairn__projlist *l, const char *arg, cairn_error *err);

/* Adds the projects of the file at path. CAIRN_EINVAL naming the file,
 * the line and the problem (nothing of the file is kept then), CAIRN_EIO
 * when it cannot be read. */
cairn_status cairn__projlist_read(cairn__projlist *l, const char *path, cairn_error *err);

void cairn__projlist_free(cairn__projlist *l);

#endif
