-- 0029_autosize.sql — tasks that size themselves (docs/jobs.md, "Automatic
-- sizes"): what workers measured of each run, how each task sizes itself,
-- and the largest measurements of each category. See schema/README.md.

-- what the worker measured of the run (feature "usage"; NULL: not reported)
ALTER TABLE results ADD COLUMN memory_bytes INTEGER; -- peak resident memory
ALTER TABLE results ADD COLUMN disk_bytes INTEGER;   -- peak bytes of its task directory
ALTER TABLE results ADD COLUMN wall_seconds REAL;    -- wall-clock time of the run
-- the memory and disk limits the master sized the attempt to (NULL: as its
-- task's run says), and, for a failure that made its task ask for more
-- (reason 'memory' or 'disk'), the MiB of that resource its next attempts get
ALTER TABLE results ADD COLUMN sized_memory_mib INTEGER;
ALTER TABLE results ADD COLUMN sized_disk_mib INTEGER;
ALTER TABLE results ADD COLUMN retry_mib INTEGER;

-- a task that sizes itself, retries larger or has a category of its own
CREATE TABLE task_sizing (
  task_id         INTEGER PRIMARY KEY REFERENCES tasks(id),
  flags           INTEGER NOT NULL,          -- 1: "resources": "auto", 2: "retry_larger"
  category        TEXT NOT NULL,             -- '' : the job's own
  grow_memory_mib INTEGER NOT NULL DEFAULT 0, -- what kills for memory made it ask (0: none)
  grow_disk_mib   INTEGER NOT NULL DEFAULT 0  -- and kills for disk
);

-- the largest measurements of a job's category's successful runs
CREATE TABLE category_peaks (
  job_id     INTEGER NOT NULL REFERENCES jobs(id),
  category   TEXT NOT NULL,
  memory_mib INTEGER NOT NULL,
  disk_mib   INTEGER NOT NULL,
  cpu_ratio  REAL NOT NULL,                  -- CPU time over wall time
  PRIMARY KEY (job_id, category)
) WITHOUT ROWID;
