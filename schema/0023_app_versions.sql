-- 0023_app_versions.sql — signed app versions (docs/apps.md): what the
-- operator published with `cairn app publish`, as signed. See schema/README.md.

-- One row per (app, version, platform): the manifest's exact text and its
-- Ed25519 signature (base64), checked against the master's --app-key when
-- published; retired: 1 once `cairn app retire` stopped new tasks using it.
CREATE TABLE app_versions (
  id        INTEGER PRIMARY KEY,
  name      TEXT NOT NULL,
  version   TEXT NOT NULL,
  platform  TEXT NOT NULL,
  manifest  TEXT NOT NULL,
  signature TEXT NOT NULL,
  retired   INTEGER NOT NULL DEFAULT 0,
  published INTEGER NOT NULL,
  UNIQUE (name, version, platform)
);

-- A file of a version (its bytes in DB.files/<sha256>, a row of files): a
-- job's deletion keeps a file a version names.
CREATE TABLE app_files (
  version_id INTEGER NOT NULL REFERENCES app_versions(id),
  sha256     TEXT NOT NULL,
  PRIMARY KEY (version_id, sha256)
) WITHOUT ROWID;
CREATE INDEX app_files_by_sha ON app_files(sha256);

-- A job's pinned version of its app ("app_version" in its job file; NULL:
-- the newest for each worker's platform).
ALTER TABLE jobs ADD COLUMN app_version TEXT;
