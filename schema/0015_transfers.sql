-- 0015_transfers.sql — what the dashboard's distribution view shows of a
-- broadcast (docs/dashboard.md, GET /v1/jobs/{id}/distribution): the copies
-- that actually travelled, and the plan the master made last for each
-- broadcast file. See schema/README.md.

-- One copy of a job's broadcast file received by volunteer dst, as its
-- worker reported it ("fetched", docs/protocol.md): from volunteer src
-- (0 = the master) of cluster src_cluster ('' = the master), bytes in
-- [start_ms, end_ms] (Unix milliseconds, the master's clock); assigned: the
-- source the master handed out for it (0 = the master, NULL: none known).
-- At most one row per (job, file, receiver): the first copy reported.
CREATE TABLE file_transfers (
  job_id      INTEGER NOT NULL,
  sha256      TEXT NOT NULL,
  dst         INTEGER NOT NULL,
  dst_cluster TEXT NOT NULL,
  src         INTEGER NOT NULL,
  src_cluster TEXT NOT NULL,
  assigned    INTEGER,
  start_ms    INTEGER NOT NULL,
  end_ms      INTEGER NOT NULL,
  bytes       INTEGER NOT NULL,
  PRIMARY KEY (job_id, sha256, dst)
) WITHOUT ROWID;

-- The broadcast plan in force for a file (rewritten with each new plan):
-- started_ms: when the file was first handed out as a broadcast input (the
-- earliest, across restarts of the master); plans: plans built for it so
-- far; body: the plan as JSON (clusters, each one's sender and planned
-- start, end and completion, from built_ms).
CREATE TABLE broadcast_plans (
  sha256     TEXT PRIMARY KEY,
  started_ms INTEGER NOT NULL,
  plans      INTEGER NOT NULL,
  body       TEXT NOT NULL
) WITHOUT ROWID;

-- A job's transfers go with its file list (its deletion), a file's plan
-- with the file.
CREATE TRIGGER file_transfers_gone AFTER DELETE ON job_files BEGIN
  DELETE FROM file_transfers WHERE job_id = OLD.job_id AND sha256 = OLD.sha256;
END;
CREATE TRIGGER broadcast_plans_gone AFTER DELETE ON files BEGIN
  DELETE FROM broadcast_plans WHERE sha256 = OLD.sha256;
END;
