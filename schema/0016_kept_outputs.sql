-- 0016_kept_outputs.sql — outputs that stay on workers (docs/jobs.md,
-- "Where outputs stay"): a job's choice, and the recorded files whose bytes
-- the master does not hold (only the workers in file_holders do) until one
-- is uploaded. See schema/README.md.

ALTER TABLE jobs ADD COLUMN keep_workers INTEGER NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS kept_files (
  sha256 TEXT PRIMARY KEY REFERENCES files(sha256) ON DELETE CASCADE -- goes with its file
) WITHOUT ROWID;
