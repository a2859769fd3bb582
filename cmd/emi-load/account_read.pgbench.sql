-- The database's own limit for account_details: one account row read by its
-- token (issue 18's "pgbench reading the same row by token"). The token is
-- picked inside the statement from bench_accounts (the Bench Partner's
-- accounts, i = 1..naccounts; `make bench` creates it), so each transaction
-- is one statement.
-- Run with -M prepared, the protocol emi's own read uses.
--   pgbench -n -M prepared -c 16 -j 2 -T 6 -D naccounts=N -f cmd/emi-load/account_read.pgbench.sql "$DATABASE_URL"
\set i random(1, :naccounts)
SELECT a.token, a.partner_id, a.program, a.status FROM accounts a WHERE a.token = (SELECT token FROM bench_accounts WHERE i = :i);
