package transfers

import (
	"context"
	"errors"
	"strings"

	"emi/internal/emi"
	"emi/internal/iban"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
	"emi/internal/ukbank"
)

// Outgoing external payments (transfer_external_create) and their sandbox
// settlement (sandbox_transfer_complete, sandbox_transfer_return, and the
// back office's Complete / Return buttons).
//
// The money leaves the customer at once: one ledger transaction debits the
// source balance and credits outgoing clearing (emi.TxnOutgoing), and the
// transfer waits as `pending` until the other bank's answer. There is no
// real clearing in the sandbox; the sandbox actions play the other bank:
//
//   - complete: pending -> completed, event transfer.completed, and no
//     ledger movement. Settlement with the scheme (the money leaving
//     emi's safeguarding account) is outside the customer ledger, so
//     outgoing clearing keeps the payment as the institution's position
//     until a settlement job (not modelled) clears it against the bank
//     statement.
//   - return: pending or completed -> returned; one ledger transaction
//     (emi.TxnOutgoingReturn) debits outgoing clearing and credits the
//     source back, even when the account is now blocked (it is the
//     customer's own money coming back). When the account holding the
//     balance is terminated the credit goes to suspense instead, for the
//     back office's suspense queue. A virtual source account that is
//     terminated while its main account is not credits the main account.
//
// The transfer row is locked for both actions, so of two concurrent
// actions the second sees the first's result: a second complete or return
// is 409 / 14007 (and transfers.return_txn is set once, guarded in SQL).

// OwnBank describes emi's own identifiers, so that an outgoing payment to
// one of them is refused: money for an account held in emi moves with
// transfer_create, at once, and never leaves emi.
type OwnBank struct {
	// UK is emi's sort code with its modulus rule.
	UK ukbank.Scheme
	// IBANBankCodes maps a country to the bank code (IBAN characters 5
	// to 8) of emi's IBANs there.
	IBANBankCodes map[string]string
}

// UKIBAN returns emi's GB IBAN of a UK account number under emi's sort
// code; ok=false when the sort code is not emi's or the number fails its
// modulus rule. Virtual accounts' UK identifiers exist only inside their
// IBAN, so they are found through it.
func (b OwnBank) UKIBAN(sortCode, accountNumber string) (string, bool) {
	if b.UK.SortCode == "" || sortCode != b.UK.SortCode {
		return "", false
	}
	i, err := b.UK.IBAN(accountNumber)
	return i, err == nil
}

// checkSchemeCurrency refuses a currency the scheme does not carry: SEPA
// moves EUR, Faster Payments GBP (card top-ups any of emi's currencies).
// Incoming payers and outgoing destinations share it.
func checkSchemeCurrency(bad *kernel.Problems, scheme, currency string) {
	switch {
	case currency == "":
	case scheme == emi.SchemeSEPA && currency != "EUR":
		bad.Add("currency", "must be EUR for a SEPA payment (to or from an IBAN)")
	case scheme == emi.SchemeFasterPayments && currency != "GBP":
		bad.Add("currency", "must be GBP for a Faster Payment (to or from a UK account number and sort code)")
	}
}

// MaxReturnReason bounds a return's reason (the length SEPA gives a
// remittance line).
const MaxReturnReason = 140

// CreateExternal sends money from a balance of the calling partner to an
// account at another bank (transfer_external_create): EUR by SEPA to an
// IBAN (with an optional BIC), or GBP by Faster Payments to a UK account
// number and sort code. The source is debited at once to outgoing clearing
// and the transfer is `pending` until the other bank completes or returns
// it.
//
// A destination held in emi is refused (14001 naming the field): such
// money moves with transfer_create, at once and inside emi. So is a
// destination under emi's own sort code or IBAN bank code that no account
// holds. UK account numbers are checked with the modulus rule of emi's own
// sort code only; other banks' rules (the Pay.UK weight table) are not
// loaded, so their account numbers are checked for shape (8 digits).
//
// Errors as Create: 14001 for malformed input (every problem at once),
// 14002 when the source is not one of the partner's balances, 14005 when
// it has no balance in the currency, 14004 when its account (or the main
// account behind a virtual one) is blocked or terminated, 14003 when funds
// are short. Nothing changes on any error.
func (s *Transfers) CreateExternal(ctx context.Context, in emi.TransferExternalCreate) (emi.Transfer, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrForbidden)
	if err != nil {
		return emi.Transfer{}, err
	}
	in.Currency, in.Reference = strings.TrimSpace(in.Currency), strings.TrimSpace(in.Reference)
	in.Destination.Name = strings.TrimSpace(in.Destination.Name)
	var bad kernel.Problems
	if err := bad.AddErr("", s.validate.Struct(in, emi.ErrTransferValidation)); err != nil {
		return emi.Transfer{}, err
	}
	accounts.CheckAmount(&bad, int64(in.Amount))
	if in.Currency != "" && !emi.ValidCurrency(in.Currency) {
		bad.Add("currency", "must be EUR, BGN or GBP")
	}
	checkReference(&bad, in.Reference)
	checkParty(&bad, "source", in.Source)
	cp, lookup := s.checkExternal(&bad, in.Currency, in.Destination)
	if len(bad) > 0 {
		return emi.Transfer{}, emi.ErrTransferValidation.WithFields(bad...)
	}
	if err := s.refuseOwn(ctx, cp, lookup); err != nil {
		return emi.Transfer{}, err
	}
	amount := int64(in.Amount)
	var out emi.Transfer
	var verdict monitoring.Verdict
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		verdict = monitoring.Verdict{}
		src, found, err := s.store.FindParty(ctx, in.Source, in.Currency)
		if err != nil {
			return err
		}
		if !found || src.PartnerID != p.PartnerID {
			return emi.ErrTransferNotFound.Field("source", "is not a balance or account of yours")
		}
		if src.Currency != in.Currency {
			return emi.ErrCurrencyMismatch.Field("source", "has no "+in.Currency+" balance")
		}
		if err := s.ledger.LockUsable(ctx, accounts.Side{Field: "source", Party: src}); err != nil {
			return err
		}
		if err := s.complianceHold(ctx, src); err != nil {
			return err
		}
		now := s.now.At(ctx).UTC()
		t := emi.Transfer{Token: kernel.NewToken(), PartnerID: p.PartnerID, Type: emi.TransferOutgoing, Status: emi.TransferPending,
			SourceAccount: src.Account, SourceBalance: src.Balance, Counterparty: cp, Amount: amount, Currency: in.Currency,
			Reference: in.Reference, CreatedAt: now, UpdatedAt: now, SourceIBAN: src.IBAN, SourcePartner: src.PartnerID}
		key, country := monitoring.CounterpartyOf(cp)
		verdict, err = s.monitor.Screen(ctx, monitoring.Movement{PartnerID: p.PartnerID, Account: src.Account,
			Kind: monitoring.KindTransferOut, Direction: monitoring.Out, Amount: amount, Currency: in.Currency,
			CounterpartyKey: key, CounterpartyCountry: country, Source: t.Token})
		if err != nil {
			return err
		}
		if verdict.Outcome == monitoring.OutcomeDecline {
			return errDeclined
		}
		held := verdict.Outcome == monitoring.OutcomeHold
		kind, credit := emi.TxnOutgoing, emi.Entry{Internal: emi.LedgerOutgoingClearing, Currency: in.Currency, Amount: amount}
		if held {
			kind, credit = emi.TxnReviewHold, emi.Entry{Internal: emi.LedgerReviewHold, Currency: in.Currency, Amount: amount}
			t.Status = emi.TransferHeldForReview
		}
		posted, err := s.ledger.Post(ctx, emi.LedgerTxn{Kind: kind, PartnerID: p.PartnerID, Reference: in.Reference,
			Entries: []emi.Entry{{Balance: src.Balance, Account: src.Account, Currency: in.Currency, Amount: -amount}, credit}})
		if errors.Is(err, emi.ErrInsufficientFunds) {
			return emi.ErrInsufficientFunds.Field("amount", "is more than the source's available balance")
		}
		if err != nil {
			return err
		}
		t.Txn = posted.ID
		if err := s.store.InsertTransfer(ctx, t); err != nil {
			return err
		}
		if held {
			if err := s.monitor.Held(ctx, verdict, t.Token); err != nil {
				return err
			}
			if err := emitTransfer(ctx, s.events, t, emi.EventTransferHeldForReview); err != nil {
				return err
			}
		}
		if err := s.audit.Record(ctx, emi.AuditEntry{Action: "transfer.create_outgoing", ResourceType: "transfer", ResourceToken: t.Token,
			PartnerID: p.PartnerID, Changes: map[string]any{"amount": emi.FormatMinor(amount), "currency": in.Currency,
				"source_account": src.Account, "scheme": cp.Scheme, "status": t.Status}}); err != nil {
			return err
		}
		out, err = PartnerView(t, p.PartnerID)
		return err
	})
	if errors.Is(err, errDeclined) {
		return emi.Transfer{}, s.declined(ctx, verdict)
	}
	return out, err
}

// checkExternal checks the destination of an outgoing payment and returns
// it normalised as the counterparty, with the party to look up in emi.
func (s *Transfers) checkExternal(bad *kernel.Problems, currency string, d emi.ExternalParty) (emi.Counterparty, emi.TransferParty) {
	const f = "destination"
	cp := emi.Counterparty{Name: d.Name}
	checkPrintable(bad, f+".name", d.Name)
	hasIBAN := strings.TrimSpace(d.IBAN) != ""
	hasUK := strings.TrimSpace(d.AccountNumber) != "" || strings.TrimSpace(d.SortCode) != ""
	switch {
	case hasIBAN && hasUK:
		bad.Add(f, "give either iban (SEPA, EUR) or account_number with sort_code (Faster Payments, GBP), not both")
		return cp, emi.TransferParty{}
	case !hasIBAN && !hasUK:
		bad.Add(f, "give iban (SEPA, EUR) or account_number with sort_code (Faster Payments, GBP)")
		return cp, emi.TransferParty{}
	case hasIBAN:
		cp.Scheme = emi.PaymentSchemeSEPA
		cp.IBAN = iban.Normalize(d.IBAN)
		if err := iban.Validate(cp.IBAN); err != nil {
			bad.Add(f+".iban", "must be a valid IBAN: "+err.Error())
		}
		if strings.TrimSpace(d.BIC) != "" {
			cp.BIC = strings.ToUpper(strings.TrimSpace(d.BIC))
			if !ValidBIC(cp.BIC) {
				bad.Add(f+".bic", "must be a BIC: 4 letters (bank), 2 letters (country), 2 letters or digits (location), optionally 3 more (branch)")
			}
		}
		checkSchemeCurrency(bad, cp.Scheme, currency)
		return cp, emi.TransferParty{IBAN: cp.IBAN}
	}
	cp.Scheme = emi.PaymentSchemeFasterPayments
	cp.AccountNumber = strings.NewReplacer(" ", "", "-", "").Replace(d.AccountNumber)
	cp.SortCode = strings.NewReplacer(" ", "", "-", "").Replace(d.SortCode)
	if d.BIC != "" {
		bad.Add(f+".bic", "goes with iban only (SEPA)")
	}
	if cp.AccountNumber == "" || cp.SortCode == "" {
		bad.Add(f, "account_number and sort_code go together")
		return cp, emi.TransferParty{}
	}
	okNum, okSort := iban.ValidUKAccountNumber(cp.AccountNumber), iban.ValidSortCode(cp.SortCode)
	if !okNum {
		bad.Add(f+".account_number", "must be 8 digits")
	}
	if !okSort {
		bad.Add(f+".sort_code", "must be 6 digits (dashes and spaces allowed)")
	}
	if okNum && okSort && s.own.UK.SortCode != "" && cp.SortCode == s.own.UK.SortCode && !s.own.UK.Valid(cp.AccountNumber) {
		bad.Add(f+".account_number", "fails the modulus check of sort code "+fmtSortCode(cp.SortCode))
	}
	checkSchemeCurrency(bad, cp.Scheme, currency)
	return cp, emi.TransferParty{AccountNumber: cp.AccountNumber, SortCode: cp.SortCode}
}

// refuseOwn refuses a destination held in emi (found as incoming credits
// find it, a virtual account's UK details included), or under emi's own
// sort code or IBAN bank code (14001 naming the field).
func (s *Transfers) refuseOwn(ctx context.Context, cp emi.Counterparty, lookup emi.TransferParty) error {
	field := "destination.iban"
	if cp.Scheme == emi.PaymentSchemeFasterPayments {
		field = "destination.account_number"
	}
	_, found, err := findIdentifier(ctx, s.store, s.own, lookup, "")
	if err != nil {
		return err
	}
	if found {
		return emi.ErrTransferValidation.Field(field,
			"is an account held in emi: send the money with transfer_create (POST /v2/transfers), which moves it at once inside emi")
	}
	switch cp.Scheme {
	case emi.PaymentSchemeFasterPayments:
		if s.own.UK.SortCode != "" && cp.SortCode == s.own.UK.SortCode {
			return emi.ErrTransferValidation.Field(field, "is not an account of emi's sort code "+fmtSortCode(cp.SortCode))
		}
	case emi.PaymentSchemeSEPA:
		if code, ok := s.own.IBANBankCodes[cp.IBAN[:2]]; ok && len(cp.IBAN) >= 8 && cp.IBAN[4:8] == code {
			return emi.ErrTransferValidation.Field(field, "is an IBAN of emi that no account holds")
		}
	}
	return nil
}

// ValidBIC reports whether s is a BIC (ISO 9362) in capitals: 4 letters
// (the bank), 2 letters (the country), 2 letters or digits (the location),
// and optionally 3 letters or digits (the branch).
func ValidBIC(s string) bool {
	if len(s) != 8 && len(s) != 11 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter, digit := 'A' <= c && c <= 'Z', '0' <= c && c <= '9'
		if (i < 6 && !letter) || (i >= 6 && !letter && !digit) {
			return false
		}
	}
	return true
}

// fmtSortCode writes a sort code as people read it: 04-00-69.
func fmtSortCode(s string) string {
	if len(s) != 6 {
		return s
	}
	return s[:2] + "-" + s[2:4] + "-" + s[4:]
}

// Settlement actions of an outgoing payment.
const (
	settleComplete = "complete"
	settleReturn   = "return"
)

// SandboxComplete marks the calling partner's pending outgoing payment
// completed (sandbox_transfer_complete), as the receiving bank's
// acceptance would. 14002 for a transfer that is not the partner's
// outgoing payment, 14007 unless it is pending.
func (s *Transfers) SandboxComplete(ctx context.Context, token string) (emi.Transfer, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrTransferNotFound)
	if err != nil {
		return emi.Transfer{}, err
	}
	t, err := s.settle(ctx, token, p.PartnerID, settleComplete, "")
	if err != nil {
		return emi.Transfer{}, err
	}
	return PartnerView(t, p.PartnerID)
}

// SandboxReturn returns the calling partner's outgoing payment
// (sandbox_transfer_return), as the receiving bank sending it back would:
// the amount is credited back to the source (see the package comment of
// this file). reason (1 to 140 printable characters) is required. 14002
// for a transfer that is not the partner's outgoing payment, 14007 when
// it is already returned.
func (s *Transfers) SandboxReturn(ctx context.Context, token string, in emi.TransferReturn) (emi.Transfer, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrTransferNotFound)
	if err != nil {
		return emi.Transfer{}, err
	}
	reason, err := returnReason(in.Reason)
	if err != nil {
		return emi.Transfer{}, err
	}
	t, err := s.settle(ctx, token, p.PartnerID, settleReturn, reason)
	if err != nil {
		return emi.Transfer{}, err
	}
	return PartnerView(t, p.PartnerID)
}

// StaffComplete is SandboxComplete for the back office's sandbox button
// (emi.PermManageAccounts), on any partner's outgoing payment.
func (s *Transfers) StaffComplete(ctx context.Context, token string) (emi.Transfer, error) {
	if err := SimulateSettlement.Require(ctx); err != nil {
		return emi.Transfer{}, err
	}
	return s.settle(ctx, token, "", settleComplete, "")
}

// StaffReturn is SandboxReturn for the back office's sandbox button
// (emi.PermManageAccounts), on any partner's outgoing payment.
func (s *Transfers) StaffReturn(ctx context.Context, token, reason string) (emi.Transfer, error) {
	if err := SimulateSettlement.Require(ctx); err != nil {
		return emi.Transfer{}, err
	}
	reason, err := returnReason(reason)
	if err != nil {
		return emi.Transfer{}, err
	}
	return s.settle(ctx, token, "", settleReturn, reason)
}

func returnReason(reason string) (string, error) {
	reason = strings.TrimSpace(reason)
	var bad kernel.Problems
	switch {
	case reason == "":
		bad.Add("reason", "is required: why the receiving bank returned the payment")
	case len([]rune(reason)) > MaxReturnReason:
		bad.Add("reason", "must be at most 140 characters")
	default:
		checkReference(&bad, reason)
	}
	if len(bad) > 0 {
		for i := range bad {
			bad[i].Field = "reason"
		}
		return "", emi.ErrTransferValidation.WithFields(bad...)
	}
	return reason, nil
}

// settle completes or returns an outgoing payment of partnerID ("" for
// staff: any partner's) under the transfer row's lock.
func (s *Transfers) settle(ctx context.Context, token, partnerID, action, reason string) (emi.Transfer, error) {
	if !s.sandbox {
		return emi.Transfer{}, emi.ErrRouteNotFound
	}
	var out emi.Transfer
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		t, err := s.store.Transfer(ctx, token, true)
		if err != nil {
			return err
		}
		if t.Type != emi.TransferOutgoing || (partnerID != "" && t.PartnerID != partnerID) {
			return emi.ErrTransferNotFound
		}
		var (
			event   emi.EventType
			changes = map[string]any{"from": t.Status}
		)
		switch action {
		case settleComplete:
			if !t.CanComplete() {
				return emi.ErrTransferInvalidTransition.WithDetail("complete a %s transfer", t.Status)
			}
			if err := s.store.SetTransferStatus(ctx, t.Token, emi.TransferCompleted); err != nil {
				return err
			}
			event = emi.EventTransferCompleted
		default:
			if !t.CanReturn() {
				return emi.ErrTransferInvalidTransition.WithDetail("return a returned transfer")
			}
			credit, err := s.returnCredit(ctx, t)
			if err != nil {
				return err
			}
			var txnID int64
			if credit.Internal == emi.LedgerSuspense {
				it, err := s.returnToSuspense(ctx, t, partnerID)
				if err != nil {
					return err
				}
				txnID, changes["suspense_item"] = it.Txn, it.Token
			} else {
				posted, err := s.ledger.Post(ctx, emi.LedgerTxn{Kind: emi.TxnOutgoingReturn, PartnerID: t.PartnerID, Reference: t.Reference,
					Entries: []emi.Entry{{Internal: emi.LedgerOutgoingClearing, Currency: t.Currency, Amount: -t.Amount}, credit}})
				if err != nil {
					return err
				}
				txnID = posted.ID
			}
			if err := s.store.SetTransferReturned(ctx, t.Token, txnID, reason); err != nil {
				return err
			}
			event = emi.EventTransferReturned
			changes["reason"] = reason
			if credit.Internal != "" {
				changes["credited"] = credit.Internal
			} else {
				changes["credited"] = credit.Account
			}
		}
		if out, err = s.store.Transfer(ctx, t.Token, false); err != nil {
			return err
		}
		changes["to"] = out.Status
		if err := s.audit.Record(ctx, emi.AuditEntry{Action: "transfer.sandbox_" + action, ResourceType: "transfer", ResourceToken: t.Token,
			PartnerID: t.PartnerID, Changes: changes}); err != nil {
			return err
		}
		return emitTransfer(ctx, s.events, out, event)
	})
	return out, err
}

// returnCredit is the entry that gives a returned payment back: the source
// balance, shown on the source account (on the main account when a
// virtual source is terminated), or suspense when the account holding the
// balance is terminated. The balance is locked before the statuses are
// read, as LockUsable does.
func (s *Transfers) returnCredit(ctx context.Context, t emi.Transfer) (emi.Entry, error) {
	locked, err := s.ledger.Lock(ctx, t.SourceBalance)
	if err != nil {
		return emi.Entry{}, err
	}
	b, ok := locked[t.SourceBalance]
	if !ok {
		return emi.Entry{}, emi.Internal(errors.New("return: the source balance is gone"))
	}
	st, err := s.ledger.AccountStatuses(ctx, t.SourceAccount, b.Account)
	if err != nil {
		return emi.Entry{}, err
	}
	credit := emi.Entry{Balance: t.SourceBalance, Account: t.SourceAccount, Currency: t.Currency, Amount: t.Amount}
	switch {
	case st[b.Account] == emi.AccountTerminated:
		credit = emi.Entry{Internal: emi.LedgerSuspense, Currency: t.Currency, Amount: t.Amount}
	case st[t.SourceAccount] == emi.AccountTerminated:
		credit.Account = b.Account
	}
	return credit, nil
}

// returnToSuspense parks a returned payment whose account is terminated
// on suspense (outgoing clearing -> suspense, emi.TxnOutgoingReturn) with
// its suspense item (emi.SuspenseAccountTerminated), so the back office's
// queue shows the money: staff assign it to another balance of the
// customer or send it back. The payer is the payment's counterparty (the
// bank that sent it back); partnerID is the partner whose sandbox call
// returned it ("" for staff).
func (s *Transfers) returnToSuspense(ctx context.Context, t emi.Transfer, partnerID string) (emi.SuspenseItem, error) {
	ident := emi.TransferParty{IBAN: t.SourceIBAN}
	if ident.IBAN == "" {
		ident = emi.TransferParty{Balance: t.SourceBalance}
	}
	return parkInSuspense(ctx, s.ledger, s.suspense, s.audit, s.now,
		emi.LedgerTxn{Kind: emi.TxnOutgoingReturn, PartnerID: t.PartnerID, Reference: t.Reference},
		emi.LedgerOutgoingClearing, "transfer.return_suspense", emi.SuspenseItem{Scheme: t.Counterparty.Scheme,
			Amount: t.Amount, Currency: t.Currency, Payer: t.Counterparty, Identifier: describeParty(ident), Destination: ident,
			Reason: emi.SuspenseAccountTerminated, Reference: t.Reference, Account: t.SourceAccount, PartnerID: partnerID})
}

// StaffTransfer is a transfer as the back office shows it: both sides,
// the journal entries of its transactions and its audit rows.
type StaffTransfer struct {
	emi.Transfer
	Entries []emi.LedgerEntryView
	Audit   []emi.AuditEntry
}

// StaffGet returns a transfer for the back office (emi.PermViewAccounts).
func (s *Transfers) StaffGet(ctx context.Context, token string) (StaffTransfer, error) {
	if err := accounts.View.Require(ctx); err != nil {
		return StaffTransfer{}, err
	}
	t, err := s.store.Transfer(ctx, token, false)
	if err != nil {
		return StaffTransfer{}, err
	}
	v := StaffTransfer{Transfer: t}
	ids := []int64{t.Txn}
	if t.ReturnTxn != 0 {
		ids = append(ids, t.ReturnTxn)
	}
	if v.Entries, err = s.store.TxnEntries(ctx, ids); err != nil {
		return v, err
	}
	v.Audit, err = s.audit.Trail(ctx, emi.AuditFilter{ResourceType: "transfer", ResourceToken: t.Token, Limit: 200})
	return v, err
}

// Sandbox reports whether the sandbox settlement actions are enabled.
func (s *Transfers) Sandbox() bool { return s.sandbox }
