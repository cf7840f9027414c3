-- 0014_audit_chain.sql — the tamper-evident audit trail (docs/accountability.md,
-- "Tamper-evident audit trail"). See schema/README.md.

-- One entry per chained record, written in the transaction of the records it
-- describes. body: the entry's canonical content (server/chain.h);
-- prev: the hash of entry seq - 1 (32 zero bytes for seq 1);
-- hash = SHA-256(prev || SHA-256(body)). vol, task, idx: what the entry is
-- about (NULL: not that), for exports of one job.
CREATE TABLE audit_chain (
  seq   INTEGER PRIMARY KEY,
  kind  TEXT NOT NULL,
  vol   INTEGER,
  task  INTEGER,
  idx   INTEGER,
  body  BLOB NOT NULL,
  prev  BLOB NOT NULL,
  hash  BLOB NOT NULL
);

-- A signed head: Ed25519 over "cairn-audit-checkpoint-1" || seq (8 bytes,
-- big-endian) || hash || time (8 bytes, big-endian), by the key in
-- DB.audit-key (pubkey).
CREATE TABLE audit_checkpoints (
  id     INTEGER PRIMARY KEY,
  seq    INTEGER NOT NULL,
  hash   BLOB NOT NULL,
  time   INTEGER NOT NULL,
  pubkey BLOB NOT NULL,
  sig    BLOB NOT NULL
);
