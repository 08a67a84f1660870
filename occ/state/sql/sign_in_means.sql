-- Who can still authenticate: the last-administrator guard counts only these.

-- name: able_to_sign_in
-- Which of these principals are enabled and hold a way in: a live API key, an identity linked
-- to a sign-in provider (they can sign in again), or a user session or CLI token not revoked
-- and not past its absolute timeout (a one-time sign-in link included: it can be redeemed).
SELECT p.id
  FROM occ.principals p
 WHERE p.id = ANY (CAST(:principal_ids AS text[]))
   AND p.disabled_at IS NULL
   AND (EXISTS (SELECT 1 FROM occ.api_keys k
                 WHERE k.principal_id = p.id AND k.revoked_at IS NULL)
        OR EXISTS (SELECT 1 FROM occ.principal_identities i WHERE i.principal_id = p.id)
        OR EXISTS (SELECT 1 FROM occ.user_sessions s
                    WHERE s.principal_id = p.id AND s.revoked_at IS NULL
                      AND s.expires_at > clock_timestamp()))
 ORDER BY p.id;
