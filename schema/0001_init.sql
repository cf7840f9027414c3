-- 0001_init.sql — Cairn's first schema. See schema/README.md for the invariants.

CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE volunteers (
  id          INTEGER PRIMARY KEY,          -- also the ATAF row x
  name        TEXT NOT NULL,
  cluster     TEXT NOT NULL,
  apps        TEXT NOT NULL,                -- JSON array of app names
  slots       INTEGER NOT NULL,
  token_hash  TEXT NOT NULL UNIQUE,         -- sha256 of the bearer token
  peer_url    TEXT,                         -- its file server for peers
  created     INTEGER NOT NULL,
  banned      INTEGER NOT NULL DEFAULT 0,
  ban_reason  TEXT
);

CREATE TABLE files (
  sha256  TEXT PRIMARY KEY,
  size    INTEGER NOT NULL,
  created INTEGER NOT NULL
);

CREATE TABLE jobs (
  id            INTEGER PRIMARY KEY,
  name          TEXT NOT NULL,
  app           TEXT NOT NULL,
  policy        TEXT NOT NULL,
  replication   INTEGER NOT NULL,
  quorum        INTEGER NOT NULL,
  lease_seconds INTEGER NOT NULL,
  max_attempts  INTEGER NOT NULL,
  state         TEXT NOT NULL CHECK (state IN ('running', 'done', 'failed')),
  created       INTEGER NOT NULL,
  finished      INTEGER
);

CREATE TABLE job_files (
  job_id    INTEGER NOT NULL REFERENCES jobs(id),
  seq       INTEGER NOT NULL,               -- position in the job's "files"
  name      TEXT NOT NULL,
  sha256    TEXT NOT NULL REFERENCES files(sha256),
  broadcast INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (job_id, seq),
  UNIQUE (job_id, name)
);

CREATE TABLE tasks (
  id       INTEGER PRIMARY KEY,             -- the task key
  job_id   INTEGER NOT NULL REFERENCES jobs(id),
  seq      INTEGER NOT NULL,                -- position in the job's "tasks"
  name     TEXT NOT NULL,                   -- the job file's task id
  args     TEXT NOT NULL,                   -- JSON array of strings
  inputs   TEXT NOT NULL,                   -- JSON array of job_files.seq
  state    TEXT NOT NULL CHECK (state IN ('waiting', 'eligible', 'running', 'done', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,      -- allocations issued in this round
  accepted INTEGER,                         -- allocations.idx of the accepted result
  round    INTEGER NOT NULL DEFAULT 0,      -- bumped when a ban re-queues the task
  UNIQUE (job_id, seq),
  UNIQUE (job_id, name)
);

CREATE TABLE task_parents (
  task_id   INTEGER NOT NULL REFERENCES tasks(id),
  parent_id INTEGER NOT NULL REFERENCES tasks(id),
  pos       INTEGER NOT NULL,               -- order in the task's "after"
  PRIMARY KEY (task_id, pos)
) WITHOUT ROWID;

CREATE TABLE allocations (
  idx           INTEGER PRIMARY KEY,        -- accountable index phi(row, t)
  volunteer_id  INTEGER NOT NULL REFERENCES volunteers(id),
  t             INTEGER NOT NULL,
  task_id       INTEGER NOT NULL REFERENCES tasks(id),
  round         INTEGER NOT NULL DEFAULT 0, -- the task's round when allocated
  issued        INTEGER NOT NULL,
  lease_expires INTEGER NOT NULL,
  state         TEXT NOT NULL CHECK (state IN ('leased', 'returned', 'expired')),
  UNIQUE (volunteer_id, t)
);
CREATE INDEX allocations_task ON allocations(task_id);
CREATE INDEX allocations_leased ON allocations(state) WHERE state = 'leased';

CREATE TABLE results (
  idx          INTEGER PRIMARY KEY REFERENCES allocations(idx),
  task_id      INTEGER NOT NULL REFERENCES tasks(id),
  volunteer_id INTEGER NOT NULL REFERENCES volunteers(id),
  exit_status  INTEGER NOT NULL,
  output       BLOB NOT NULL,
  digest       TEXT NOT NULL,               -- sha256 of output
  received     INTEGER NOT NULL,
  outcome      TEXT NOT NULL
               CHECK (outcome IN ('valid', 'invalid', 'pending', 'error', 'tainted'))
);
CREATE INDEX results_task ON results(task_id);
