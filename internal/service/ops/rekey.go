package ops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"emi/internal/service/cards"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
	"emi/internal/service/partners"
	"emi/internal/service/people"
	"emi/internal/service/staff"
)

// Key rotation: re-sealing every stored secret under the current key.
//
// After the operator deploys a new current master key with the old one as
// previous (internal/seal, "Rotation"), values sealed under the old key
// still open but must be re-sealed before the old key can be removed.
// Rekeyer walks every sealed column of the database (SealedTables) in
// batches: each batch is one transaction that locks its rows, so a change
// the server makes at the same time waits for the batch and is never
// overwritten with an older value. A value that needs a rekey is opened and
// sealed again under the current key with the same context, and a lookup
// digest computed from it is recomputed. A value that does not open is a
// failure: it is reported (table, column, row, never the value) and left as
// it is, the walk goes on, and Rekey returns an error. Running it again
// re-seals nothing that is already current, so a run that was interrupted
// is resumed by starting it again.

// SealedColumn is a column of sealed values and the seal context of a
// row's value (from the row's key).
type SealedColumn struct {
	Name    string
	Context func(row string) string
}

// SealedLookup is a column of keyed lookup digests (Vault.Lookup) computed
// from the plaintext of a sealed column of the same row.
type SealedLookup struct {
	Column  string // the digest column
	Of      string // the sealed column whose plaintext is digested
	Context string // the Lookup context
}

// SealedTable is a table with sealed columns, walked in the order of its
// key, a uuid primary key.
type SealedTable struct {
	Name    string
	Key     string
	Columns []SealedColumn
	Lookup  *SealedLookup
	// MaxBatch caps the rows per transaction for tables of large values
	// (documents); 0 means no cap beyond RekeyOptions.Batch.
	MaxBatch int
}

// SealedTables lists every sealed column of emi's database with the
// context its values are sealed in: the same context functions the
// services seal and open with. A new sealed column must be added here; a
// test compares this list with the bytea columns of the schema.
func SealedTables() []SealedTable {
	return []SealedTable{
		{Name: "partner_keys", Key: "id", Columns: []SealedColumn{
			{Name: "secret_enc", Context: partners.KeySecretContext},
			{Name: "previous_secret_enc", Context: partners.KeySecretContext},
		}},
		{Name: "webhook_endpoints", Key: "id", Columns: []SealedColumn{
			{Name: "secret_enc", Context: partners.WebhookSecretContext},
			{Name: "previous_secret_enc", Context: partners.WebhookSecretContext},
		}},
		{Name: "staff_users", Key: "id", Columns: []SealedColumn{
			{Name: "totp_secret_enc", Context: staff.TOTPSecretContext},
		}},
		// The approver's half of a pending privileged change's temporary
		// password (cleared when the change is decided).
		{Name: "staff_changes", Key: "id", Columns: []SealedColumn{
			{Name: "second_half_enc", Context: staff.SecondHalfContext},
		}},
		{Name: "kyc_sessions", Key: "token", Columns: []SealedColumn{
			{Name: "secret_enc", Context: people.KYCSecretContext},
		}},
		{Name: "documents", Key: "token", MaxBatch: 8, Columns: []SealedColumn{
			{Name: "content_enc", Context: people.DocumentContext},
		}},
		// Compliance's case documents and approved reports.
		{Name: "monitoring_case_documents", Key: "token", MaxBatch: 8, Columns: []SealedColumn{
			{Name: "content_enc", Context: monitoring.CaseDocumentContext},
		}},
		{Name: "monitoring_reports", Key: "token", Columns: []SealedColumn{
			{Name: "xml_enc", Context: monitoring.ReportContext},
		}},
		// Stored idempotent responses (they may hold personal data); rows
		// stored before migration 00054 have a clear body instead and are
		// pruned.
		{Name: "idempotency_keys", Key: "id", Columns: []SealedColumn{
			{Name: "body_enc", Context: kernel.IdempotencyBodyContext},
		}},
		{Name: "cards", Key: "token", Columns: []SealedColumn{
			{Name: "pan_sealed", Context: cards.PANContext},
			{Name: "cvv_sealed", Context: cards.CVVContext},
			{Name: "pin_sealed", Context: cards.PINContext},
		}, Lookup: &SealedLookup{Column: "pan_lookup", Of: "pan_sealed", Context: cards.PANLookupContext}},
	}
}

// RekeyProbeBytes is how much of each sealed value a walk reads first: more
// than a sealed value's header and minimum length (seal.Overhead, 37
// bytes), so NeedsRekey answers the same for the prefix as for the whole
// value, and a document of megabytes is read in full only when it needs a
// rekey.
const RekeyProbeBytes = 64

// SealedRow is one row of a sealed table: its key and its values by column
// (nil for NULL).
type SealedRow struct {
	Key    string
	Values map[string][]byte
}

// RekeyStore reads and writes the sealed columns of a SealedTable.
type RekeyStore interface {
	// SealedRows returns up to limit rows of t whose key is greater than
	// after ("" for the first), in key order, locked for update when lock
	// is set (inside a transaction). The sealed columns are cut to their
	// first prefix bytes; the lookup column and the column it is computed
	// from are returned whole.
	SealedRows(ctx context.Context, t SealedTable, after string, limit, prefix int, lock bool) ([]SealedRow, error)
	// SealedValues returns the whole values of columns for the rows with
	// the given keys.
	SealedValues(ctx context.Context, t SealedTable, columns, keys []string) (map[string]map[string][]byte, error)
	// UpdateSealed writes new values of some columns of some rows, in one
	// statement; a column missing from a row's Values (or nil) keeps its
	// value.
	UpdateSealed(ctx context.Context, t SealedTable, rows []SealedRow) error
}

// RekeyOptions tune a walk.
type RekeyOptions struct {
	// Batch is the number of rows per transaction (0: 500).
	Batch int
	// Progress, when set, is called after every batch with the running
	// totals of the table being walked.
	Progress func(RekeyTableReport)
	// Tables limits the walk to these tables (nil: SealedTables()).
	Tables []SealedTable
}

// RekeyTableReport counts one table's values (non-NULL sealed values;
// NULLs are not counted).
type RekeyTableReport struct {
	Table string
	Rows  int
	// Scanned values; Resealed under the current key by this run;
	// Current already under it; Failed did not open (left as they are).
	Scanned, Resealed, Current, Failed int
	// Remaining (Check only): values not under the current key.
	Remaining int
	// Lookups recomputed (Rekey) or stale (Check: a digest that is not the
	// current key's digest of its value).
	Lookups int
	Elapsed time.Duration
}

// RekeyFailure is a value that could not be re-sealed. Err names the
// reason (unknown key, corrupt or moved value) and never the value.
type RekeyFailure struct {
	Table, Column, Row string
	Err                error
}

func (f RekeyFailure) String() string {
	return fmt.Sprintf("%s.%s of row %s: %v", f.Table, f.Column, f.Row, f.Err)
}

// RekeyReport is the result of a walk.
type RekeyReport struct {
	Tables   []RekeyTableReport
	Failures []RekeyFailure
}

// Remaining is the number of values not under the current key, plus the
// stale lookups, in a Check report.
func (r RekeyReport) Remaining() int {
	n := 0
	for _, t := range r.Tables {
		n += t.Remaining + t.Lookups
	}
	return n
}

// Totals sums the tables.
func (r RekeyReport) Totals() RekeyTableReport {
	var out RekeyTableReport
	for _, t := range r.Tables {
		out.Rows += t.Rows
		out.Scanned += t.Scanned
		out.Resealed += t.Resealed
		out.Current += t.Current
		out.Failed += t.Failed
		out.Remaining += t.Remaining
		out.Lookups += t.Lookups
		out.Elapsed += t.Elapsed
	}
	return out
}

// ErrRekeyFailed is returned (wrapped, with the count) by Rekey when some
// values did not open; the report lists them.
var ErrRekeyFailed = errors.New("some sealed values could not be re-sealed")

// Rekeyer re-seals stored values under the current key.
type Rekeyer struct {
	tx    kernel.TxRunner
	store RekeyStore
	vault cards.Vault
}

// RekeyerDeps is what Rekeyer needs; NewRekeyer checks that none is nil.
type RekeyerDeps struct {
	Tx    kernel.TxRunner
	Store RekeyStore
	Vault cards.Vault
}

// NewRekeyer returns the re-encryption job.
func NewRekeyer(d RekeyerDeps) *Rekeyer {
	kernel.MustHave("Rekeyer", d)
	return &Rekeyer{tx: d.Tx, store: d.Store, vault: d.Vault}
}

func (o RekeyOptions) batch(t SealedTable) int {
	n := o.Batch
	if n <= 0 {
		n = 500
	}
	if t.MaxBatch > 0 && n > t.MaxBatch {
		n = t.MaxBatch
	}
	return n
}

func (o RekeyOptions) tables() []SealedTable {
	if o.Tables != nil {
		return o.Tables
	}
	return SealedTables()
}

// Rekey re-seals every value that needs it (Vault.NeedsRekey) under the
// current key, with the same context, and recomputes lookup digests that
// are not the current key's. It returns an error wrapping ErrRekeyFailed
// when some values did not open (listed in the report), and stops at the
// first database error.
func (r *Rekeyer) Rekey(ctx context.Context, o RekeyOptions) (RekeyReport, error) {
	var rep RekeyReport
	for _, t := range o.tables() {
		tr, failures, err := r.rekeyTable(ctx, t, o)
		rep.Tables = append(rep.Tables, tr)
		rep.Failures = append(rep.Failures, failures...)
		if err != nil {
			return rep, fmt.Errorf("rekey %s: %w", t.Name, err)
		}
	}
	if len(rep.Failures) > 0 {
		return rep, fmt.Errorf("%w: %d value(s)", ErrRekeyFailed, len(rep.Failures))
	}
	return rep, nil
}

// batchResult is what one batch did; kept apart from the table's totals
// because the transaction may be retried.
type batchResult struct {
	rows                                int
	last                                string
	scanned, resealed, current, lookups int
	failures                            []RekeyFailure
}

func (r *Rekeyer) rekeyTable(ctx context.Context, t SealedTable, o RekeyOptions) (RekeyTableReport, []RekeyFailure, error) {
	start := time.Now()
	tr := RekeyTableReport{Table: t.Name}
	var failures []RekeyFailure
	limit := o.batch(t)
	after := ""
	for {
		var b batchResult
		err := r.tx.InTx(ctx, func(ctx context.Context) error {
			b = batchResult{}
			return r.rekeyBatch(ctx, t, after, limit, &b)
		})
		if err != nil {
			tr.Elapsed = time.Since(start)
			return tr, failures, err
		}
		tr.Rows += b.rows
		tr.Scanned += b.scanned
		tr.Resealed += b.resealed
		tr.Current += b.current
		tr.Lookups += b.lookups
		tr.Failed += len(b.failures)
		failures = append(failures, b.failures...)
		tr.Elapsed = time.Since(start)
		if o.Progress != nil {
			o.Progress(tr)
		}
		if b.rows < limit {
			return tr, failures, nil
		}
		after = b.last
	}
}

// rekeyBatch re-seals one batch of rows, locked, in the transaction of ctx.
func (r *Rekeyer) rekeyBatch(ctx context.Context, t SealedTable, after string, limit int, b *batchResult) error {
	rows, err := r.store.SealedRows(ctx, t, after, limit, RekeyProbeBytes, true)
	if err != nil {
		return err
	}
	b.rows = len(rows)
	if len(rows) == 0 {
		return nil
	}
	b.last = rows[len(rows)-1].Key
	// Which values need a rekey, by row.
	need := map[string][]string{}
	var needRows []string
	var needCols []string
	seenCol := map[string]bool{}
	for _, row := range rows {
		for _, c := range t.Columns {
			v := row.Values[c.Name]
			if v == nil {
				continue
			}
			b.scanned++
			if !r.vault.NeedsRekey(v) {
				b.current++
				continue
			}
			if len(need[row.Key]) == 0 {
				needRows = append(needRows, row.Key)
			}
			need[row.Key] = append(need[row.Key], c.Name)
			if !seenCol[c.Name] {
				seenCol[c.Name] = true
				needCols = append(needCols, c.Name)
			}
		}
	}
	var full map[string]map[string][]byte
	if len(needRows) > 0 {
		if full, err = r.store.SealedValues(ctx, t, needCols, needRows); err != nil {
			return err
		}
	}
	var updates []SealedRow
	for _, row := range rows {
		set := map[string][]byte{}
		fail := func(col string, err error) {
			b.failures = append(b.failures, RekeyFailure{Table: t.Name, Column: col, Row: row.Key, Err: err})
		}
		for _, col := range need[row.Key] {
			c := t.column(col)
			v := full[row.Key][col]
			if v == nil {
				// The row is locked since the probe, so this cannot happen;
				// report rather than guess.
				fail(col, errors.New("the value vanished during the rekey"))
				continue
			}
			if t.Lookup != nil && col == t.Lookup.Of {
				sealed, digest, err := r.resealWithLookup(v, c.Context(row.Key), t.Lookup.Context)
				if err != nil {
					fail(col, err)
					continue
				}
				set[col] = sealed
				b.resealed++
				if !bytes.Equal(digest, row.Values[t.Lookup.Column]) {
					set[t.Lookup.Column] = digest
					b.lookups++
				}
				continue
			}
			sealed, err := r.vault.Rekey(v, c.Context(row.Key))
			if err != nil {
				fail(col, err)
				continue
			}
			set[col] = sealed
			b.resealed++
		}
		// A value already under the current key whose digest is not the
		// current key's (written under another key): recompute the digest.
		if t.Lookup != nil && set[t.Lookup.Of] == nil {
			if v := row.Values[t.Lookup.Of]; v != nil && !r.vault.NeedsRekey(v) {
				digest, err := r.currentLookup(v, t.column(t.Lookup.Of).Context(row.Key), t.Lookup.Context)
				if err != nil {
					fail(t.Lookup.Of, err)
				} else if !bytes.Equal(digest, row.Values[t.Lookup.Column]) {
					set[t.Lookup.Column] = digest
					b.lookups++
				}
			}
		}
		if len(set) > 0 {
			updates = append(updates, SealedRow{Key: row.Key, Values: set})
		}
	}
	if len(updates) == 0 {
		return nil
	}
	return r.store.UpdateSealed(ctx, t, updates)
}

// resealWithLookup opens a value, seals it again under the current key and
// returns the current key's lookup digest of its plaintext, which is
// cleared before returning.
func (r *Rekeyer) resealWithLookup(v []byte, context, lookupContext string) (sealed, digest []byte, err error) {
	plain, err := r.vault.Open(v, context)
	if err != nil {
		return nil, nil, err
	}
	defer clear(plain)
	if sealed, err = r.vault.Seal(plain, context); err != nil {
		return nil, nil, err
	}
	return sealed, r.vault.Lookup(lookupContext, plain), nil
}

// currentLookup opens a value and returns the current key's lookup digest
// of its plaintext.
func (r *Rekeyer) currentLookup(v []byte, context, lookupContext string) ([]byte, error) {
	plain, err := r.vault.Open(v, context)
	if err != nil {
		return nil, err
	}
	defer clear(plain)
	return r.vault.Lookup(lookupContext, plain), nil
}

// Check counts, without changing anything, the values that are not under
// the current key (Remaining) and the lookup digests that are not the
// current key's digest of their value (Lookups). Nothing is locked. A
// value whose lookup digest cannot be checked because it does not open is
// listed in Failures.
func (r *Rekeyer) Check(ctx context.Context, o RekeyOptions) (RekeyReport, error) {
	var rep RekeyReport
	for _, t := range o.tables() {
		start := time.Now()
		tr := RekeyTableReport{Table: t.Name}
		limit := o.batch(t)
		after := ""
		for {
			rows, err := r.store.SealedRows(ctx, t, after, limit, RekeyProbeBytes, false)
			if err != nil {
				rep.Tables = append(rep.Tables, tr)
				return rep, fmt.Errorf("check %s: %w", t.Name, err)
			}
			tr.Rows += len(rows)
			for _, row := range rows {
				for _, c := range t.Columns {
					v := row.Values[c.Name]
					if v == nil {
						continue
					}
					tr.Scanned++
					if r.vault.NeedsRekey(v) {
						tr.Remaining++
					} else {
						tr.Current++
					}
				}
				if t.Lookup == nil {
					continue
				}
				v := row.Values[t.Lookup.Of]
				if v == nil || r.vault.NeedsRekey(v) {
					continue // counted with the value
				}
				digest, err := r.currentLookup(v, t.column(t.Lookup.Of).Context(row.Key), t.Lookup.Context)
				if err != nil {
					tr.Failed++
					rep.Failures = append(rep.Failures, RekeyFailure{Table: t.Name, Column: t.Lookup.Of, Row: row.Key, Err: err})
					continue
				}
				if !bytes.Equal(digest, row.Values[t.Lookup.Column]) {
					tr.Lookups++
				}
			}
			tr.Elapsed = time.Since(start)
			if o.Progress != nil {
				o.Progress(tr)
			}
			if len(rows) < limit {
				break
			}
			after = rows[len(rows)-1].Key
		}
		rep.Tables = append(rep.Tables, tr)
	}
	return rep, nil
}

func (t SealedTable) column(name string) SealedColumn {
	for _, c := range t.Columns {
		if c.Name == name {
			return c
		}
	}
	// The store returns only the columns of t: this is a programming error.
	panic("rekey: " + t.Name + " has no sealed column " + name)
}
