-- 0004_invitations.sql — invitation codes the admin hands out when
-- registration is by invitation (cairn-server --registration invite). Only
-- the SHA-256 of a code is kept; a revoked invitation's row is deleted.
-- See schema/README.md.

CREATE TABLE invitations (
  id        INTEGER PRIMARY KEY,
  code_hash TEXT NOT NULL UNIQUE,          -- SHA-256 (hex) of the code
  prefix    TEXT NOT NULL,                 -- the code's first characters, to tell codes apart
  uses      INTEGER NOT NULL,              -- registrations the code allows
  used      INTEGER NOT NULL DEFAULT 0,    -- registrations made with it
  expires   INTEGER NOT NULL,              -- Unix seconds after which it is refused
  note      TEXT NOT NULL DEFAULT '',
  created   INTEGER NOT NULL
);
