-- 0008_outputs.sql — output files: what each task declares and reads of its
-- parents' outputs, the files each result named (stored content-addressed
-- in DB.files/<sha256>, recorded in files), and the tail of standard error
-- kept with every result. See schema/README.md.

CREATE TABLE task_io (
  task_id      INTEGER PRIMARY KEY REFERENCES tasks(id),
  outputs      TEXT NOT NULL,   -- JSON array of {"name", "max_mib"}: the declared patterns
  parent_files TEXT NOT NULL    -- JSON array of [parent position in "after" order, NAME]
);

CREATE TABLE result_files (
  idx    INTEGER NOT NULL REFERENCES results(idx),
  name   TEXT NOT NULL,         -- path relative to the task directory
  sha256 TEXT NOT NULL REFERENCES files(sha256),
  size   INTEGER NOT NULL,
  PRIMARY KEY (idx, name)
) WITHOUT ROWID;
CREATE INDEX result_files_sha256 ON result_files(sha256);

ALTER TABLE results ADD COLUMN stderr BLOB;  -- the last 64 KiB of standard error
