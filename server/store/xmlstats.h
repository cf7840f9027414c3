/* xmlstats.h — BOINC-format XML statistics exports of a Cairn database
 * (private to server/ and the CLI; docs/project.md, "Statistics
 * exports"; docs/references.md [BOINC-stats]).
 *
 * One export writes four files into a folder: user.gz (accounts with
 * credit), team.gz (teams of accounts with credit), host.gz (volunteers
 * with credit, banned ones left out) and tables.xml (the counts, the
 * total credit, the applications). It reads the database file on a
 * read-only connection of its own, in one read transaction (one snapshot
 * for all four files; WAL: it blocks neither the master's writer nor its
 * reader; but while it reads, a checkpoint cannot move the WAL past its
 * snapshot, so the WAL grows by what the master writes meanwhile), and
 * never touches a running master's state or locks. Rows are
 * streamed from SQLite to gzip: O(1) memory in the number of accounts,
 * teams and hosts (each query walks a table in id order by its primary
 * key, joins by primary key; no sort, no temporary b-tree but the
 * applications' names); O(rows) time.
 *
 * Each file is written to a temporary file in the folder, flushed to
 * disk (fsync), then renamed over the old one, tables.xml last, and the
 * folder is flushed: a reader (GET /stats/..., a web server) opens either
 * the whole old file or the whole new one, never a part. An export that
 * fails before its renames removes its temporary files and leaves the old
 * ones as they were. */
#ifndef CAIRN_STORE_XMLSTATS_H
#define CAIRN_STORE_XMLSTATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/error.h"

/* The files of an export, in the order they are renamed into place. */
#define CAIRN__XMLSTATS_NFILES 4
extern const char *const cairn__xmlstats_files[CAIRN__XMLSTATS_NFILES];

typedef struct cairn__xmlstats_summary {
  int64_t update_time;   /* Unix seconds of the snapshot (tables.xml's update_time) */
  int64_t users, teams, hosts;
  double total_credit;   /* of the hosts exported */
  double seconds;        /* the export's wall time */
  uint64_t bytes[CAIRN__XMLSTATS_NFILES]; /* each file's size, in cairn__xmlstats_files' order */
} cairn__xmlstats_summary;

/* Exports the statistics of the database at db_path into dir (made, mode
 * 0755, when missing). The database must have the schema of accounts,
 * teams and host cpids (0024, 0025, 0027): a master of this version
 * opened it once. cancel (NULL: none) set to non-zero makes an export
 * under way stop at its next row (CAIRN_ETIMEOUT, "cancelled"). CAIRN_OK
 * with *out filled; else the error names the file or the step that
 * failed and nothing in dir changed. */
cairn_status cairn__xmlstats_export(const char *db_path, const char *dir, const atomic_int *cancel,
                                   cairn__xmlstats_summary *out, cairn_error *err);

#endif
