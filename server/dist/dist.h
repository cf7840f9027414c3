/* dist.h — the distribution module (distribution.c, bplan.c, keep.c): the
 * master's record of uploaded files and of outputs kept on workers, who
 * holds a verified copy, copies under way, measured link rates and
 * broadcast plans; where each worker fetches its inputs and its parents'
 * files from. Private to server/.
 *
 * Owns: its state (dist_int.h), which nothing else touches. Reads: the
 * core's volunteers (id, name, cluster, peer URL, standing, last seen) and
 * jobs' input files. Called only by the core (core.c, volunteers.c, jobs.c, load.c, life.c,
 * outputs.c, keep.c), under the core's lock; it journals through the core's journal.
 */
#ifndef CAIRN_DIST_H
#define CAIRN_DIST_H

#include "common/outputs.h"
#include "server/model/state.h"

/* Counters for /metrics. */
typedef struct cairn__dist_counters {
  uint64_t bytes_master, bytes_peer; /* input bytes sent by the master, by peers */
  uint64_t bytes_received;           /* bytes of files uploaded to the master */
  uint64_t fetch_reports;            /* "fetched" entries workers reported */
  uint64_t peer_failures[CAIRN_FAIL_REASONS]; /* "failed" entries, by reason */
  uint64_t relay_sources;            /* sources named while still receiving (cut-through) */
  uint64_t mcast_plans;              /* multicast plans of kept outputs built (mcast.c) */
  uint64_t kept_planned, kept_online; /* kept-output hand-outs naming the planned sender
                                        first, or left to the online rule (keep.c) */
  uint64_t kept_from_plan;           /* kept-output copies reported from the planned sender */
  uint64_t recomputed;               /* done tasks made eligible again, an output lost (keep.c) */
} cairn__dist_counters;

/* Parents a hold of the lock may find lost (keep.c). */
#define CAIRN__LOST_MAX 16

/* Over this many clusters a grid planner is replaced by lcf (bplan.c): the
 * grid heuristics cost about O(k³) in practice (bench/census: 0.3 ms at 64
 * clusters, 40 ms at 256 on a loaded machine), lcf O(k log k). */
#define CAIRN__BPLAN_GRID_MAX 64
/* A broadcast plan covers at most this many clusters, the first present
 * (distribution.c ensure_plan); workers of the others follow the online
 * rule. */
#define CAIRN__PLAN_MAX_CLUSTERS 512
/* A multicast plan of kept outputs (mcast.c) covers at most this many
 * workers (holders, then receivers) and kept files, and tracks at most this
 * many needs (a worker that must fetch a kept file); the rest follow the
 * online rule. CDMD cuts files into packets of this many bytes. */
#define CAIRN__MCAST_NODES 32
#define CAIRN__MCAST_FILES 16
#define CAIRN__MCAST_NEEDS 256
#define CAIRN__MCAST_PACKET (1024 * 1024)
/* The broadcast planner of a new core (bplan.c). */
#define CAIRN__BPLAN_DEFAULT "ECEF-LA"

/* Empty state with the default planner; NULL out of memory. */
cairn__dist *cairn__dist_create(void);
void cairn__dist_destroy(cairn__dist *d);

/* Chooses the broadcast planner (cairn__bplan_algorithms()); CAIRN_EINVAL
 * naming the choices when unknown. */
cairn_status cairn__dist_set_planner(cairn__dist *d, const char *algo, cairn_error *err);
/* The canonical name of a broadcast planner, or NULL when unknown. */
const char *cairn__bplan_algorithm(const char *name);
/* "online, lcf, …" for messages. */
const char *cairn__bplan_algorithms(void);

/* 1 when file sha256 was uploaded, or is an output kept on workers (its
 * size in *size when not NULL). */
int cairn__dist_has_file(cairn__dist *d, const char *sha256, int64_t *size);

/* ---- outputs kept on workers (keep.c; docs/jobs.md "Where outputs stay") ----
 * A kept output is a file record (J_FILE) marked remote (J_KEPT, table
 * kept_files): the master has no bytes of it, its holders do. Its first
 * upload (cairn__dist_add_file) clears the mark. */
/* 1 when file sha256 is recorded and only workers hold its bytes. O(1). */
int cairn__dist_remote(cairn__dist *d, const char *sha256);
/* At start-up (not journaled): marks file sha256 remote, or not. */
void cairn__dist_set_remote(cairn__dist *d, const char *sha256, int on);
/* Holders looked at per kept file when choosing sources or deciding that it
 * is lost: the bound of every kept-output path under the lock. */
#define CAIRN__KEEP_SCAN 32u
/* 1 when task v of j, allocated to vol, keeps its output files on vol:
 * j keeps outputs on workers, v declares outputs and has children (a sink's
 * are final: the master keeps them), and vol serves peers. O(1). */
int cairn__keep_wanted(const mjob *j, uint32_t v, const mvol *vol);
/* Before task v of j is allocated to vol: 0 when each parent's file it
 * reads can be fetched (the master has it, vol holds it, or a holder the
 * master can offer sends fewer than 4 copies now); else 1 and v waits: for
 * a busy holder, one silent less than 90 s (or any in the 90 s after the
 * master started), or when none is left (silent longer, paused after a
 * failed download, banned, dropped) for its parent's recomputation
 * (cairn__lost_note). O(pins × CAIRN__KEEP_SCAN × copies under way of the
 * file), the copies at most 4 per holder looked at: O(pins × 32 × 128). */
int cairn__keep_ready(cairn__core *c, const mvol *vol, const mjob *j, uint32_t v);
/* Sets a parent's file input entry in: "url" and "sources" (the planned
 * sender, or else a worker of vol's cluster still receiving the file when
 * the cluster has no usable holder and the master serves the file's chunk
 * digests (a relay, "&relay=1"); then holders in vol's cluster, then other
 * holders, each sending fewer than its --peer-max copies and with its
 * grant, at most 3; then the master's /v1/files/SHA when it has the
 * bytes); the copy from the first is under way until vol reports the
 * file. O(CAIRN__KEEP_SCAN × copies under way of the file), as above. */
void cairn__keep_sources(cairn__core *c, const mvol *vol, const char *sha256, json_t *in);
/* 1 when a result of lease l may name files the master does not have:
 * cairn__keep_wanted held when it was offered. O(1). */
int cairn__keep_may(const mlease *l);
/* Records the files of a checked result of lease l that the master has no
 * bytes of as kept on l's volunteer: a remote file record when new
 * (J_FILE, J_KEPT), and the volunteer as a holder (J_HOLD). 0, or -1 out of
 * memory. O(n). */
int cairn__keep_hold(cairn__core *c, const mlease *l, const cairn__output_file *files, size_t n);
/* Records an uploaded file (journaled, J_FILE); *existed when it was
 * already known. CAIRN_ECONFLICT on a key collision, CAIRN_ENOMEM. */
cairn_status cairn__dist_add_file(cairn__core *c, const char *sha256, int64_t size, int *existed,
                                  cairn_error *err);
/* Marks (or unmarks) file sha256 as a deleted job's, which the store may be
 * removing: a job naming it is refused meanwhile (cairn__dist_file_dying,
 * checked by the submission under the lock), and an upload of it
 * (cairn__dist_add_file) unmarks it and records it again. Marks count: two
 * deletions naming the same file each mark it and unmark it once. */
int cairn__dist_file_dying(cairn__dist *d, const char *sha256);
void cairn__dist_set_dying(cairn__dist *d, const char *sha256, int dying);
/* Forgets file sha256 (its holders, copies under way, plan) when it is
 * still marked dying: its store rows went with a deleted job (the store
 * side is J_JOBDEL's). Returns 1 then (the caller removes its bytes), 0
 * when it was uploaded again meanwhile. O(1) + its size. */
int cairn__dist_remove_file(cairn__dist *d, const char *sha256);
/* At start-up (not journaled). 0, or -1 out of memory. */
int cairn__dist_restore_file(cairn__dist *d, const char *sha256, int64_t size);
/* A rate read back from the store at start-up. 0, or -1 out of memory. */
int cairn__rate_restore(cairn__dist *d, const char *src, const char *dst, double bps,
                        int64_t samples);
/* The byte counters (the totals of /metrics, each file's, their sums in a
 * job's distribution view) stop at CAIRN__BYTES_MAX instead of wrapping:
 * a peer may report up to 256 x 2^50 bytes a report (common/protocol.h),
 * 2^64 in 64 reports. INT64_MAX, so that the JSON views (signed) show the
 * same number as /metrics. */
#define CAIRN__BYTES_MAX ((uint64_t)INT64_MAX)
/* a + b, at most CAIRN__BYTES_MAX. Pure, O(1). */
static inline uint64_t cairn__bytes_add(uint64_t a, uint64_t b) {
  return a >= CAIRN__BYTES_MAX || b >= CAIRN__BYTES_MAX - a ? CAIRN__BYTES_MAX : a + b;
}
/* Counts bytes of file sha256 served by the master (by 0), or by volunteer
 * by as it reports them: only when the master knows the file and records by
 * as one of its holders (a report for a file it does not hold counts
 * nothing). O(1). */
void cairn__dist_served(cairn__dist *d, const char *sha256, uint64_t bytes, int64_t by);
void cairn__dist_get_counters(const cairn__dist *d, cairn__dist_counters *out);
/* The measured link rates: [{"from", "to", "bytes_per_second", "samples"}]. */
json_t *cairn__rates_json(const cairn__dist *d);

/* Builds the inputs[] of a work answer for task v of job j given to vol:
 * each input with its sources (peers first for broadcast files). Returns 0,
 * 1 when a broadcast input cannot be served to vol yet (a copy is on its way
 * into vol's cluster), -1 out of memory. Records the transfers it starts. */
int cairn__dist_inputs(cairn__core *c, mvol *vol, mjob *j, uint32_t v, json_t **inputs);
/* vol holds file sha256 (verified) from now. A new holding is journaled
 * (J_HOLD); one already known, or of a banned volunteer, changes nothing. */
void cairn__dist_have(cairn__core *c, mvol *vol, const char *sha256);
/* At start-up (not journaled): vol has held file sha256 since then, as the
 * store says, which lists each holding once. An unknown file or a banned
 * volunteer is skipped. 0, or -1 out of memory. */
int cairn__dist_restore_holder(cairn__core *c, mvol *vol, const char *sha256, int64_t since);
/* v's peer URL is v->peer_url from now (registration, a report that
 * changes it, start-up): a source naming it is v's, or that of the
 * volunteers that said it before v and still say it (a worker registered
 * anew; CAIRN__PEER_TWINS looked at at most). O(1); out of memory, sources
 * naming it are not recognised (no rate sample, no failure counted). */
#define CAIRN__PEER_TWINS 8
void cairn__dist_peer_url(cairn__dist *d, mvol *v);
/* vol was banned: it leaves the census now (O(1)); its holdings and the
 * copies on their way to it are forgotten in steps (below). The store
 * side is J_BAN's. */
void cairn__dist_forget(cairn__core *c, mvol *vol);
/* Forgets vol's holdings and the copies on their way to it in at most n
 * more buckets of the file table (from vol->forget_at; a table grown
 * meanwhile is visited again from its start, which changes nothing twice).
 * 1 when the whole table is done. O(n + the visited files' holders of vol
 * and copies under way). */
int cairn__dist_forget_step(cairn__core *c, mvol *vol, size_t n);
/* v made a request at now: it counts in the census of the clusters present
 * (census.c) for CAIRN__CENSUS_SECONDS. O(its apps) + the expiry of two
 * volunteers whose time is up. */
void cairn__dist_seen(cairn__core *c, mvol *v, int64_t now);
/* "bytes_served" and per-file distribution figures of a job: O(its files
 * + for each broadcast file its holders and the workers it was handed to). */
json_t *cairn__dist_job_json(cairn__core *c, const mjob *j);
/* vol downloaded bytes of file sha in ms from source (a URL of its sources:
 * the master, a holder, or a relay still receiving the file): a copy in the
 * job's transfer log, and a rate sample from the source's cluster into
 * vol's (not from a relay, whose own copy paced it). */
void cairn__dist_fetched(cairn__core *c, const mvol *vol, const char *sha, const char *source,
                         int64_t bytes, int64_t ms);
/* reporter's download of file sha from source (a URL of its sources) failed
 * for reason (CAIRN_FAIL_*). The holders of sha whose peer URL source names
 * no longer send a copy to reporter; after "size" or "digest" their copy is
 * bad: they hold sha no more (journaled, J_UNHOLD) until they report it
 * again; after "unreachable", "stalled" or "status" their file server is
 * not offered for PEER_FAILED_SECONDS (30 s). A source that names no holder, or a
 * banned reporter, changes nothing. O(holders + transfers of sha). */
void cairn__dist_failed(cairn__core *c, const mvol *reporter, const char *sha, const char *source,
                        int reason);


/* ---- outputs kept on workers (keep.c) ---- */
/* Under the lock: task parent of j is DONE but an output a child reads is
 * held by no worker the master can offer and not by the master: noted for
 * cairn__lost_flush (each once; ignored past CAIRN__LOST_MAX). O(nlost). */
void cairn__lost_note(cairn__core *c, const mjob *j, uint32_t parent);
/* Recomputes the noted parents (c->calls.recompute) and empties the list;
 * called by cairn__core_unlock under the lock before the seal. */
void cairn__lost_flush(cairn__core *c);
/* Volunteer vol may upload file sha256 (PUT /v1/files, as it leaves): the
 * master has no bytes of it (an output kept on workers), vol holds it, and
 * no other holder can be offered. CAIRN_ECONFLICT otherwise (not needed),
 * CAIRN_EFORBIDDEN when vol does not hold it. Takes the lock;
 * O(CAIRN__KEEP_SCAN). */
cairn_status cairn__core_kept_upload(cairn__core *c, int64_t vol, const char *sha256,
                                     cairn_error *err);

/* 1 with *size when sha256 is an output kept on workers (the master has no
 * bytes of it), else 0. Takes the lock; O(1). */
int cairn__core_kept_file(cairn__core *c, const char *sha256, int64_t *size);
/* The master served kept file sha256's chunk digests (GET
 * /v1/files/{sha256}/chunks): its receivers may be named as relays of it
 * (keep.c). Takes the lock; O(1). */
void cairn__core_kept_chunked(cairn__core *c, const char *sha256);

/* on 1 (default): a worker still receiving a broadcast file, whose reports
 * say it relays ("chunks"), may be named as a source of it (cut-through);
 * 0: sources are whole copies only (store-and-forward). relay.c. */
void cairn__core_set_cut_through(cairn__core *c, int on);
/* Chooses the planner of kept outputs' copies (mcast.c): WR, WRP, CDMD or
 * online (default); CAIRN_EINVAL naming the choices when unknown. */
cairn_status cairn__core_set_mcast(cairn__core *c, const char *algo, cairn_error *err);

#endif
