-- 0006_job_lifecycle.sql — a job's priority, how an operator ended it, and
-- each volunteer's allocation count kept apart from its allocation rows (so
-- that a purge never lets an index be handed out twice). See schema/README.md.

ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
-- NULL while the job lives; 'cancelled' (no more allocations); 'deleting'
-- or 'purging' while its rows are deleted in steps (a restarted master
-- finishes them); 'deleted' (its tasks, results and files removed; the row
-- stays so that its id is never reused). It overrides state, which keeps
-- what the tasks made of it.
ALTER TABLE jobs ADD COLUMN ended TEXT
  CHECK (ended IN ('cancelled', 'deleting', 'purging', 'deleted'));
-- the largest t the volunteer was given, written before a purge deletes
-- allocation rows; its next t is one more than this or MAX(allocations.t)
ALTER TABLE volunteers ADD COLUMN allocations INTEGER NOT NULL DEFAULT 0;
CREATE INDEX job_files_sha256 ON job_files(sha256);
