package frame

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/cards"
)

// Formatting several areas' screens share (one home each): times, scores,
// sort codes, a statement's or transfer's other side, the search box's
// masked query, and the CSV export every list uses.

// MaskedQuery is what the search box shows of a query: a query that may be
// a full card number (13 to 19 digits once spaces and dashes are dropped)
// comes back masked, so no page echoes a card number.
func MaskedQuery(q string) string {
	if pan, ok := cards.PANQuery(q); ok {
		return cards.MaskPAN(pan)
	}
	return q
}

const stamp = "2006-01-02 15:04:05"

func FmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(stamp)
}

func FmtTimeOrEmpty(t *time.Time) string {
	if t == nil {
		return ""
	}
	return FmtTime(*t)
}

func FirstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// Age writes how long ago t was, coarsely: 40 s, 12 min, 5 h, 3 d.
func Age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(max(d, 0)/time.Second)) + " s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + " d"
}

func Score(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }

// WebURL returns s when it is an http or https address (a link), "" for
// anything else (shown as text).
func WebURL(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ""
	}
	return u.String()
}

// FirstLine keeps the first line of an error (stacks stay in the database).
func FirstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}

// FieldList reads a list of field names separated by commas or white
// space, without repeats.
func FieldList(s string) []string {
	out := []string{}
	for _, f := range strings.FieldsFunc(s, func(c rune) bool { return c == ',' || c == ';' || c == ' ' || c == '\t' || c == '\n' || c == '\r' }) {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// amountCell matches the amounts emi writes (FormatMinor): exact numbers,
// which a spreadsheet reads as numbers, never as formulas.
var amountCell = regexp.MustCompile(`^-?[0-9]+\.[0-9]{2}$`)

// csvCell defuses a cell a spreadsheet would run as a formula (CSV
// injection): one starting with =, +, -, @, a tab or a carriage return is
// prefixed with an apostrophe. An exact decimal amount as emi writes it
// (-12.50) is a number, not a formula, and stays as it is, so a debit keeps
// its minus sign.
func csvCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) && !amountCell.MatchString(s) {
		return "'" + s
	}
	return s
}

// WriteCSV sends rows as a CSV attachment, every cell defused.
func WriteCSV(w http.ResponseWriter, name string, rows [][]string) {
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+SafeFileName(strings.TrimSuffix(name, ".csv"))+`.csv"`)
	// An export is personal data: no cache keeps a copy.
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	cw := csv.NewWriter(w)
	for _, row := range rows {
		cells := make([]string, len(row))
		for i, c := range row {
			cells[i] = csvCell(c)
		}
		if err := cw.Write(cells); err != nil {
			return
		}
	}
	cw.Flush()
}

// SafeFileName keeps letters, digits, '-' and '_' (the catalogue's document
// and file types are made of them), so the header cannot be broken.
func SafeFileName(s string) string {
	return strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			return c
		}
		return -1
	}, s)
}

// FmtSortCode writes a sort code as people read it: 04-00-75.
func FmtSortCode(s string) string {
	if len(s) != 6 {
		return s
	}
	return s[:2] + "-" + s[2:4] + "-" + s[4:]
}

// txnKindLabels name ledger transaction kinds on statements.
var txnKindLabels = map[string]string{
	emi.TxnTransfer:       "internal transfer",
	emi.TxnIncoming:       "incoming payment",
	emi.TxnOutgoing:       "outgoing payment",
	emi.TxnOutgoingReturn: "returned payment",
	emi.TxnSuspenseAssign: "assigned from suspense",
	emi.TxnSuspenseReturn: "returned from suspense",
	emi.TxnAdjustment:     "adjustment",
	emi.TxnCardClearing:   "card payment",
	emi.TxnReversal:       "reversal",
	"opening":             "opening balance",
}

func TxnKindLabel(k string) string { return FirstNonEmpty(txnKindLabels[k], k) }

// CardLast4 shows the last four digits of a card.
func CardLast4(last4 string) string { return "card •••• " + last4 }

// CounterpartyIdents lists what is known of a side besides its name: its
// IBAN, its sort code and account number, the last four digits of the card
// of a card top-up (a statement's other side, a suspense item's payer).
func CounterpartyIdents(c emi.Counterparty) []string {
	var out []string
	if c.IBAN != "" {
		out = append(out, "IBAN "+c.IBAN)
	}
	if c.AccountNumber != "" {
		out = append(out, FmtSortCode(c.SortCode)+" "+c.AccountNumber)
	}
	if c.CardLast4 != "" {
		out = append(out, CardLast4(c.CardLast4))
	}
	return out
}
