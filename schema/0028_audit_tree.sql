-- 0028_audit_tree.sql — the audit log: a Merkle tree over the audit chain's
-- entries (RFC 9162 §2.1; leaf index = seq - 1, leaf input = the entry's
-- body), its signed tree heads, and the index that finds an allocation's
-- entries (docs/accountability.md, "A log every volunteer can check";
-- server/store/tree.h). See schema/README.md.

-- A perfect subtree of the tree: the hash of the 2^level leaves that end
-- where the tree has size leaves (leaves [size - 2^level, size): node
-- (level, size / 2^level - 1) of RFC 9162's tree), written in the
-- transaction of its last leaf's entry; keyed by size first, so that the
-- nodes an append completes go to the rightmost page. Only levels from 4
-- up are kept (server/store/tree.h, CAIRN_TREE_LOW): a lower node is
-- computed from the at most 8 bodies it covers. The tree's size is the chain's (meta audit_tree_size while it
-- lags behind: a build under way, or the chain written with the tree off);
-- a database with entries and no tree (made before this migration) gets its
-- tree at the master's next start.
CREATE TABLE audit_tree (
  size  INTEGER NOT NULL,
  level INTEGER NOT NULL,
  hash  BLOB NOT NULL,
  PRIMARY KEY (size, level)
) WITHOUT ROWID;

-- A signed tree head: Ed25519, by the key in DB.audit-key, over
-- "cairn-sth-v1" || tree_size (8 bytes, big-endian) || timestamp (ms since
-- 1970, 8 bytes, big-endian) || root (32 bytes). Every head signed is kept;
-- the newest is the one of the largest id.
CREATE TABLE audit_sth (
  id        INTEGER PRIMARY KEY,
  tree_size INTEGER NOT NULL,
  timestamp INTEGER NOT NULL,
  root      BLOB NOT NULL,
  signature BLOB NOT NULL
);
CREATE INDEX audit_sth_by_size ON audit_sth(tree_size);

-- An allocation's entry and its result's, by accountable index: the leaves
-- of a receipt and of `cairn audit index N`.
CREATE INDEX audit_chain_by_idx ON audit_chain(idx) WHERE kind IN ('alloc', 'result');
