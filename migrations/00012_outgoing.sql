-- +goose Up

-- Outgoing payments and statements (issue 10, items 4 and 5).
--
-- A statement line finds the transfer it belongs to by the transfer's
-- transaction (transfers_txn) or, for the credit of a returned outgoing
-- payment, by its return transaction: index that too, or every returned
-- line would scan the transfers.
CREATE INDEX transfers_return_txn ON transfers (return_txn) WHERE return_txn IS NOT NULL;

-- +goose Down
DROP INDEX transfers_return_txn;
