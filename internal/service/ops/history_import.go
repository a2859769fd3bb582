package ops

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
)

// PartyFinder finds the balances of accounts (postgres.TransferStore).
type PartyFinder interface {
	// FindAccountParties resolves accounts[i] in currencies[i] as
	// FindParty resolves an account token: its balance in the currency,
	// else another of its balances; found[i] is false when there is no
	// such account.
	FindAccountParties(ctx context.Context, accounts, currencies []string) (parties []accounts.Party, found []bool, err error)
}

// HistoryImport books a sandbox partner's history of money movements with
// their original times (contract §12, `emi sandbox import-history`):
// through the ledger, as the API books them, and recorded for transaction
// monitoring as of their time, so compliance can try the rules on
// realistic data. Production refuses it.
type HistoryImport struct {
	tx      kernel.TxRunner
	ledger  *accounts.Ledger
	parties PartyFinder
	monitor *monitoring.Monitor
	audit   *kernel.Auditor
	now     kernel.Clock
	sandbox bool
	chunk   int
}

// HistoryImportDeps is what HistoryImport needs.
type HistoryImportDeps struct {
	Tx      kernel.TxRunner
	Ledger  *accounts.Ledger
	Parties PartyFinder
	Monitor *monitoring.Monitor
	Audit   *kernel.Auditor
	Now     kernel.Clock
	Sandbox bool `deps:"optional"`
	// Chunk is how many lines a transaction books (0: historyChunk); tests
	// make it small to book small files in many chunks.
	Chunk int `deps:"optional"`
}

// NewHistoryImport returns the importer.
func NewHistoryImport(d HistoryImportDeps) *HistoryImport {
	kernel.MustHave("HistoryImport", d)
	return &HistoryImport{tx: d.Tx, ledger: d.Ledger, parties: d.Parties, monitor: d.Monitor, audit: d.Audit, now: d.Now, sandbox: d.Sandbox,
		chunk: cmp.Or(d.Chunk, historyChunk)}
}

// HistoryLine is one line of an imported history (contract §12).
type HistoryLine struct {
	Ref          string `json:"ref"`
	At           string `json:"at"`
	Kind         string `json:"kind"`
	Account      string `json:"account"`
	ToAccount    string `json:"to_account"`
	Amount       string `json:"amount"`
	Currency     string `json:"currency"`
	Counterparty *struct {
		IBAN    string `json:"iban"`
		Name    string `json:"name"`
		Country string `json:"country"`
	} `json:"counterparty"`
	Merchant *struct {
		Name    string `json:"name"`
		MCC     string `json:"mcc"`
		Country string `json:"country"`
	} `json:"merchant"`
}

// HistoryRefused is a line the ledger refused, with why.
type HistoryRefused struct {
	Ref    string
	Reason string
}

// HistoryResult is what an import did.
type HistoryResult struct {
	Booked  int
	Refused []HistoryRefused
}

// ErrHistoryMalformed is returned, wrapped with every problem, when the
// file cannot be imported; nothing is booked then.
var ErrHistoryMalformed = errors.New("the history is malformed")

// maxHistoryLine bounds one line of the file.
const maxHistoryLine = 64 << 10

// historyChunk is how many lines one transaction books, through
// Ledger.PostBatch and Monitor.RecordUnqueuedBatch: a constant number of
// statements per chunk. One commit per line made a 100,000-line history
// take minutes, and so did a savepoint and a full posting per line (about
// fifteen round trips each). The chunk's balances stay locked until it
// commits, so an API movement on one of them may wait for a chunk (a
// fraction of a second).
const historyChunk = 2000

// maxHistoryRef bounds a ref: the ledger transaction's reference is
// "history " and the ref, and a reference has at most 140 characters.
const maxHistoryRef = 140 - len("history ")

// parsedLine is a checked line.
type parsedLine struct {
	HistoryLine
	at      time.Time
	amount  int64
	src     accounts.Party
	dst     accounts.Party
	no      int
	country string
	key     string
	mcc     string
	// problems are what is wrong with the line, in the order they are
	// reported; undecoded is a line that is not JSON of a history line.
	problems  []string
	undecoded bool
}

// Import reads the JSON Lines history r of partnerID, checks every line,
// then books them in time order, historyChunk lines a transaction (each
// line as LockUsable and Post would book it alone, see Ledger.PostBatch).
// A malformed file (bad JSON, a missing or invalid field, a ref used
// twice, a time in the future, an account that is not the partner's)
// books nothing and returns ErrHistoryMalformed with the problems; a line
// the ledger refuses (not enough money, a blocked account) is reported and
// the rest go on.
// It then evaluates the rules over everything recorded.
func (h *HistoryImport) Import(ctx context.Context, partnerID string, r io.Reader) (HistoryResult, error) {
	if !h.sandbox {
		return HistoryResult{}, errors.New("import-history books invented money movements: it runs in sandbox mode only (EMI_MODE=sandbox)")
	}
	lines, problems, err := h.parse(ctx, partnerID, r)
	if err != nil {
		return HistoryResult{}, err
	}
	if len(problems) > 0 {
		if len(problems) > 20 {
			problems = append(problems[:20], fmt.Sprintf("… and %d more", len(problems)-20))
		}
		return HistoryResult{}, fmt.Errorf("%w:\n  %s", ErrHistoryMalformed, strings.Join(problems, "\n  "))
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].at.Before(lines[j].at) })
	var res HistoryResult
	for len(lines) > 0 {
		chunk := lines[:min(h.chunk, len(lines))]
		lines = lines[len(chunk):]
		var booked int
		var refused []HistoryRefused
		err := h.tx.InTx(ctx, func(ctx context.Context) error {
			var err error
			if booked, refused, err = h.book(ctx, partnerID, chunk); err != nil {
				return err
			}
			return h.audit.Record(ctx, emi.AuditEntry{Action: "sandbox.history_import", ResourceType: "partner", ResourceToken: partnerID,
				PartnerID: partnerID, Changes: map[string]any{"booked": booked, "refused": len(refused),
					"from": chunk[0].Ref, "to": chunk[len(chunk)-1].Ref}})
		})
		if err != nil {
			return res, err
		}
		res.Booked += booked
		res.Refused = append(res.Refused, refused...)
	}
	if _, err := h.monitor.Evaluate(ctx); err != nil {
		return res, err
	}
	return res, nil
}

// parse reads and checks every line, then finds every line's accounts
// with one query. The problems are listed line by line, each line's in
// the order of its fields.
func (h *HistoryImport) parse(ctx context.Context, partnerID string, r io.Reader) ([]parsedLine, []string, error) {
	var out []parsedLine
	var problems []string
	refs := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxHistoryLine)
	now := h.now()
	no := 0
	for sc.Scan() {
		no++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var l parsedLine
		l.no = no
		bad := func(format string, args ...any) {
			l.problems = append(l.problems, fmt.Sprintf("line %d: ", no)+fmt.Sprintf(format, args...))
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l.HistoryLine); err != nil {
			bad("not a history line: %v", err)
			l.undecoded = true
			out = append(out, l)
			continue
		}
		if l.Ref == "" || utf8.RuneCountInString(l.Ref) > maxHistoryRef {
			bad("ref is required (at most %d characters)", maxHistoryRef)
		} else if prev, dup := refs[l.Ref]; dup {
			bad("ref %q is also on line %d", l.Ref, prev)
		} else {
			refs[l.Ref] = no
		}
		at, err := time.Parse(time.RFC3339, l.At)
		if err != nil {
			bad("at must be an RFC 3339 time")
		} else if at.After(now) {
			bad("at is in the future")
		}
		l.at = at.UTC()
		amount, ok := emi.ParseAmount(l.Amount)
		if !ok || amount <= 0 {
			bad("amount must be a positive decimal string such as \"12.50\"")
		}
		l.amount = amount
		if !emi.ValidCurrency(l.Currency) {
			bad("currency must be EUR, BGN or GBP")
		}
		switch l.Kind {
		case monitoring.KindIncoming, monitoring.KindTransferOut:
			if l.Counterparty == nil {
				bad("%s needs a counterparty", l.Kind)
				break
			}
			l.key, l.country = monitoring.CounterpartyOf(emi.Counterparty{IBAN: l.Counterparty.IBAN, Name: l.Counterparty.Name})
			if c := strings.ToUpper(strings.TrimSpace(l.Counterparty.Country)); c != "" {
				if len(c) != 2 {
					bad("counterparty.country must be an ISO 3166 alpha-2 code")
				}
				l.country = c
			}
		case monitoring.KindTransferInternal:
			if l.ToAccount == "" {
				bad("transfer_internal needs to_account")
			}
		case monitoring.KindCardPayment, monitoring.KindCardWithdrawal:
			if l.Merchant == nil {
				bad("%s needs a merchant", l.Kind)
				break
			}
			l.key, l.mcc = monitoring.CounterpartyKey(l.Merchant.Name), strings.TrimSpace(l.Merchant.MCC)
			l.country = strings.ToUpper(strings.TrimSpace(l.Merchant.Country))
			if l.mcc != "" && (len(l.mcc) != 4 || strings.Trim(l.mcc, "0123456789") != "") {
				bad("merchant.mcc must be four digits")
			}
			if l.country != "" && len(l.country) != 2 {
				bad("merchant.country must be an ISO 3166 alpha-2 code")
			}
		default:
			bad("kind must be incoming, transfer_out, transfer_internal, card_payment or card_withdrawal")
		}
		out = append(out, l)
	}
	if err := h.resolveParties(ctx, partnerID, out); err != nil {
		return nil, nil, err
	}
	for _, l := range out {
		problems = append(problems, l.problems...)
	}
	if err := sc.Err(); err != nil {
		problems = append(problems, fmt.Sprintf("after line %d: %v", no, err))
	}
	if no == 0 && len(problems) == 0 {
		problems = append(problems, "the file is empty")
	}
	return out, problems, nil
}

// resolveParties finds the balances of every decoded line's accounts in
// its currency (one query for the file) and adds the line's problems: an
// account that is not the partner's or has no balance in the currency, an
// internal transfer to the same balance. They come after the line's other
// problems, as the line lists its fields in order.
func (h *HistoryImport) resolveParties(ctx context.Context, partnerID string, lines []parsedLine) error {
	type want struct{ account, currency string }
	index := map[want]int{}
	var accts, currencies []string
	ask := func(account, currency string) {
		w := want{account, currency}
		if _, ok := index[w]; !ok && account != "" {
			index[w] = len(accts)
			accts, currencies = append(accts, account), append(currencies, currency)
		}
	}
	for i := range lines {
		l := &lines[i]
		if l.undecoded || !emi.ValidCurrency(l.Currency) {
			continue
		}
		ask(l.Account, l.Currency)
		if l.Kind == monitoring.KindTransferInternal {
			ask(l.ToAccount, l.Currency)
		}
	}
	found := map[want]accounts.Party{}
	if len(accts) > 0 {
		parties, ok, err := h.parties.FindAccountParties(ctx, accts, currencies)
		if err != nil {
			return err
		}
		for w, i := range index {
			if ok[i] {
				found[w] = parties[i]
			}
		}
	}
	party := func(account, currency string) (accounts.Party, error) {
		if account == "" {
			return accounts.Party{}, errors.New("is required")
		}
		p, ok := found[want{account, currency}]
		if !ok || p.PartnerID != partnerID {
			return accounts.Party{}, fmt.Errorf("%q is not an account of the partner", account)
		}
		if p.Currency != currency {
			return accounts.Party{}, fmt.Errorf("%q has no %s balance", account, currency)
		}
		return p, nil
	}
	for i := range lines {
		l := &lines[i]
		if l.undecoded || !emi.ValidCurrency(l.Currency) {
			continue
		}
		bad := func(format string, args ...any) {
			l.problems = append(l.problems, fmt.Sprintf("line %d: ", l.no)+fmt.Sprintf(format, args...))
		}
		var err error
		if l.src, err = party(l.Account, l.Currency); err != nil {
			bad("account: %v", err)
		}
		if l.Kind == monitoring.KindTransferInternal && l.ToAccount != "" {
			if l.dst, err = party(l.ToAccount, l.Currency); err != nil {
				bad("to_account: %v", err)
			} else if l.dst.Balance == l.src.Balance {
				bad("to_account holds the same balance as account")
			}
			l.key, l.country = monitoring.CounterpartyOf(emi.Counterparty{IBAN: l.dst.IBAN, Name: l.dst.Account})
		}
	}
	return nil
}

// book posts a chunk of lines through the ledger in one batch
// (Ledger.PostBatch: the postings LockUsable and Post would make line by
// line, a refused line leaving nothing) and records the booked ones for
// monitoring as of their time, without queueing an evaluation (Import
// evaluates everything once it has booked).
func (h *HistoryImport) book(ctx context.Context, partnerID string, chunk []parsedLine) (int, []HistoryRefused, error) {
	batch := make([]accounts.BatchLine, len(chunk))
	for i, l := range chunk {
		batch[i] = l.posting(partnerID)
	}
	results, err := h.ledger.PostBatch(ctx, batch)
	if err != nil {
		return 0, nil, err
	}
	var refused []HistoryRefused
	var mvs []monitoring.Movement
	for i, r := range results {
		l := chunk[i]
		if r.Err != nil {
			e := emi.AsError(r.Err)
			if e.Kind == emi.KindInternal {
				return 0, nil, r.Err
			}
			refused = append(refused, HistoryRefused{Ref: l.Ref, Reason: cmp.Or(e.Public, e.Key)})
			continue
		}
		mvs = append(mvs, l.movements(partnerID, r.Posted.ID)...)
	}
	if err := h.monitor.RecordUnqueuedBatch(ctx, mvs); err != nil {
		return 0, nil, err
	}
	return len(chunk) - len(refused), refused, nil
}

// posting is the line's ledger transaction, with the sides whose accounts
// must be usable.
func (l parsedLine) posting(partnerID string) accounts.BatchLine {
	sides := []accounts.Side{{Field: "account", Party: l.src}}
	if l.Kind == monitoring.KindTransferInternal {
		sides = append(sides, accounts.Side{Field: "to_account", Party: l.dst})
	}
	txn := emi.LedgerTxn{PartnerID: partnerID, Reference: "history " + l.Ref}
	own := emi.Entry{Balance: l.src.Balance, Account: l.src.Account, Currency: l.Currency}
	switch l.Kind {
	case monitoring.KindIncoming:
		own.Amount = l.amount
		txn.Kind, txn.Entries = emi.TxnIncoming, []emi.Entry{{Internal: emi.LedgerIncomingClearing, Currency: l.Currency, Amount: -l.amount}, own}
	case monitoring.KindTransferOut:
		own.Amount = -l.amount
		txn.Kind, txn.Entries = emi.TxnOutgoing, []emi.Entry{own, {Internal: emi.LedgerOutgoingClearing, Currency: l.Currency, Amount: l.amount}}
	case monitoring.KindTransferInternal:
		own.Amount = -l.amount
		txn.Kind, txn.Entries = emi.TxnTransfer, []emi.Entry{own, {Balance: l.dst.Balance, Account: l.dst.Account, Currency: l.Currency, Amount: l.amount}}
	default: // card payments and withdrawals, cleared at once
		own.Amount = -l.amount
		txn.Kind, txn.Entries = emi.TxnCardClearing, []emi.Entry{own, {Internal: emi.LedgerCardClearing, Currency: l.Currency, Amount: l.amount}}
	}
	return accounts.BatchLine{Sides: sides, Txn: txn}
}

// movements are what monitoring records of the booked line (ledger
// transaction txn), as of its time: the account's side, and for an
// internal transfer the receiving side too.
func (l parsedLine) movements(partnerID string, txn int64) []monitoring.Movement {
	mv := monitoring.Movement{PartnerID: partnerID, Account: l.src.Account, Kind: l.Kind, Amount: l.amount, Currency: l.Currency,
		CounterpartyKey: l.key, CounterpartyCountry: l.country, MCC: l.mcc, At: l.at, Ref: l.Ref, Direction: monitoring.Out,
		Source: fmt.Sprintf("ledger:%d", txn)}
	if l.Kind == monitoring.KindIncoming {
		mv.Direction = monitoring.In
	}
	if l.Kind != monitoring.KindTransferInternal {
		return []monitoring.Movement{mv}
	}
	key, country := monitoring.CounterpartyOf(emi.Counterparty{IBAN: l.src.IBAN, Name: l.src.Account})
	in := mv
	in.Account, in.Direction, in.CounterpartyKey, in.CounterpartyCountry = l.dst.Account, monitoring.In, key, country
	return []monitoring.Movement{mv, in}
}
