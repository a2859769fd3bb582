-- The database's own limit for card_details: one card row read by its token
-- (issue 18's "pgbench reading the same row by token"), the token picked
-- inside the statement from bench_cards (`make bench` creates it).
-- Run with -M prepared, the protocol emi's own read uses.
--   pgbench -n -M prepared -c 16 -j 2 -T 6 -D ncards=N -f cmd/emi-load/card_read.pgbench.sql "$DATABASE_URL"
\set i random(1, :ncards)
SELECT c.token, c.partner_id, c.program, c.status FROM cards c WHERE c.token = (SELECT token FROM bench_cards WHERE i = :i);
