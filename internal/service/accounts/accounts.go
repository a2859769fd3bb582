package accounts

import (
	"context"
	"crypto/rand"
	"errors"
	"math/big"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/staff"
)

// AccountStore keeps programs, accounts, balances and issued identifiers.
type AccountStore interface {
	// Program returns a program with its groups. Returns
	// emi.ErrProgramNotFound.
	Program(ctx context.Context, code string) (emi.Program, error)
	Programs(ctx context.Context) ([]emi.Program, error)
	UpsertProgram(ctx context.Context, p emi.Program) error
	// ProgramStore is what managing programs needs (accounts_programs.go).
	ProgramStore
	// MerchantForAccounts reports whether merchant belongs to the partner
	// and may hold accounts (the master merchant, or one onboarded for
	// account-opening or card-issuing); found is false for unknown or
	// foreign merchants.
	MerchantForAccounts(ctx context.Context, partnerID, merchant string) (found, allowed bool, err error)
	// ActiveUser reports whether user is an active user of the partner.
	ActiveUser(ctx context.Context, partnerID, user string) (bool, error)
	InsertAccount(ctx context.Context, a emi.Account) error
	InsertBalance(ctx context.Context, b emi.Balance) error
	// RegisterIBAN records an issued IBAN; it fails with
	// emi.ErrNonUniqueValue when the IBAN exists.
	RegisterIBAN(ctx context.Context, iban, account, balance string, virtual bool) error
	// ReserveSerial reserves serial of an identifier kind ("bg", "uk")
	// whose IBAN is iban; ok is false when the serial was reserved before
	// or the IBAN is already issued (draw another).
	ReserveSerial(ctx context.Context, kind string, serial int64, iban string) (ok bool, err error)
	// Account returns an account of the partner ("" partnerID: any) with
	// its balances; forUpdate locks it. Returns emi.ErrAccountNotFound.
	Account(ctx context.Context, partnerID, token string, forUpdate bool) (emi.Account, error)
	// AccountsWithBalances returns the accounts of tokens (those that
	// exist) with their balances, as Account does, in one round trip.
	AccountsWithBalances(ctx context.Context, tokens []string) (map[string]emi.Account, error)
	SetAccountStatus(ctx context.Context, token, status string) error
	InsertStatusChange(ctx context.Context, account string, c emi.AccountStatusChange) error
	StatusHistory(ctx context.Context, account string) ([]emi.AccountStatusChange, error)
	// VirtualAccounts returns the non-terminated virtual accounts of a main
	// account, locked.
	VirtualAccounts(ctx context.Context, main string) ([]emi.Account, error)
	// VirtualsOf returns every virtual account of a main account.
	VirtualsOf(ctx context.Context, main string) ([]emi.Account, error)
	Accounts(ctx context.Context, f emi.AccountFilter) ([]emi.Account, int64, error)
}

// Identifiers issues account identifiers from serials: Bulgarian IBANs and
// UK account numbers with their GB IBAN. internal/ukbank implements it.
type Identifiers interface {
	BGIBAN(serial int64) (iban, bic string, err error)
	// UKAccount returns an account number that passes emi's modulus rule,
	// or ok=false when no account number exists for that serial.
	UKAccount(serial int64) (accountNumber, sortCode, iban, bic string, ok bool, err error)
}

// Accounts opens and controls accounts (seed "Account", contract §6, §7).
type Accounts struct {
	tx       kernel.TxRunner
	store    AccountStore
	ids      Identifiers
	controls *staff.Controls
	events   *kernel.Events
	audit    *kernel.Auditor
	validate interface {
		Struct(any, *emi.Error) error
	}
	now    kernel.Clock
	cards  CardCascade
	ledger *Ledger
	// statements reads account statements (statements.go).
	statements StatementStore
}

// CardCascade terminates the card of an account that is terminated, in
// the same transaction (contract §7). *Cards implements it.
type CardCascade interface {
	TerminateForAccount(ctx context.Context, account, reason string) error
}

// checkEmpty refuses to terminate an account whose balances hold money,
// owe money (overdraft) or have card payments on hold (13007). The
// balances are locked first, so a transfer in flight either commits before
// (and is seen) or waits and then finds the account terminated.
func (s *Accounts) checkEmpty(ctx context.Context, a emi.Account) error {
	tokens := make([]string, 0, len(a.Balances))
	for _, b := range a.Balances {
		tokens = append(tokens, b.Token)
	}
	st, err := s.ledger.Lock(ctx, tokens...)
	if err != nil {
		return err
	}
	for _, b := range st {
		if b.Posted != 0 || b.Held != 0 {
			return emi.ErrBalanceNotZero.WithDetail("balance %s: posted %d, held %d", b.Token, b.Posted, b.Held)
		}
	}
	return nil
}

// AccountsDeps is what the accounts service needs.
type AccountsDeps struct {
	Tx       kernel.TxRunner
	Store    AccountStore
	Ids      Identifiers
	Controls *staff.Controls
	Events   *kernel.Events
	Audit    *kernel.Auditor
	Validate kernel.StructValidator
	// Cards terminates an account's cards with it (*Cards, built before:
	// the card service reads accounts through the account store, not
	// through this service, so there is no cycle).
	Cards CardCascade
	// Ledger's balances decide whether an account may be terminated.
	Ledger *Ledger
	// Statements reads account statements (statements.go).
	Statements StatementStore
	Now        kernel.Clock
}

// NewAccounts returns the accounts service.
func NewAccounts(d AccountsDeps) *Accounts {
	kernel.MustHave("Accounts", d)
	return &Accounts{tx: d.Tx, store: d.Store, ids: d.Ids, controls: d.Controls, events: d.Events, audit: d.Audit,
		validate: d.Validate, now: d.Now, cards: d.Cards, ledger: d.Ledger, statements: d.Statements}
}

// Create opens an account (account_create): one balance per program
// currency with its identifiers, or, for a virtual account (main), its own
// IBANs routed to the main account's balances.
func (s *Accounts) Create(ctx context.Context, in emi.AccountCreate) (emi.Account, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrForbidden)
	if err != nil {
		return emi.Account{}, err
	}
	in.Program, in.Alias = strings.TrimSpace(in.Program), strings.TrimSpace(in.Alias)
	var bad kernel.Problems
	if err := bad.AddErr("", s.validate.Struct(in, emi.ErrAccountValidation)); err != nil {
		return emi.Account{}, err
	}
	switch {
	case in.Merchant == "" && in.User == "":
		bad.Add("merchant", "give the owner: merchant or user")
	case in.Merchant != "" && in.User != "":
		bad.Add("user", "give one owner only: merchant or user, not both")
	}
	if len(bad) > 0 {
		return emi.Account{}, emi.ErrAccountValidation.WithFields(bad...)
	}
	prog, err := s.store.Program(ctx, in.Program)
	if err != nil {
		return emi.Account{}, err
	}
	if !prog.UsableBy(p.PartnerID) {
		return emi.Account{}, emi.ErrProgramNotFound.WithDetail("program %s not allowed for partner", prog.Code)
	}
	if in.Merchant != "" {
		found, allowed, err := s.store.MerchantForAccounts(ctx, p.PartnerID, in.Merchant)
		if err != nil {
			return emi.Account{}, err
		}
		if !found {
			return emi.Account{}, emi.ErrOwnerNotFound
		}
		if !allowed {
			return emi.Account{}, emi.ErrAccountValidation.Field("merchant", "was not onboarded for account-opening or card-issuing")
		}
	} else {
		ok, err := s.store.ActiveUser(ctx, p.PartnerID, in.User)
		if err != nil {
			return emi.Account{}, err
		}
		if !ok {
			return emi.Account{}, emi.ErrOwnerNotFound
		}
	}
	now := s.now.At(ctx).UTC()
	a := emi.Account{Token: kernel.NewToken(), PartnerID: p.PartnerID, Program: prog.Code, Merchant: in.Merchant, User: in.User,
		Main: in.Main, Virtual: in.Main != "", Alias: in.Alias, Status: emi.AccountActive, CreatedAt: now, UpdatedAt: now}
	return kernel.InTxRead(ctx, s.tx, func(ctx context.Context) error {
		var main emi.Account
		if a.Virtual {
			main, err = s.store.Account(ctx, p.PartnerID, in.Main, true)
			if errors.Is(err, emi.ErrAccountNotFound) {
				return emi.ErrMainAccountInvalid.WithDetail("main account unknown")
			}
			if err != nil {
				return err
			}
			switch {
			case main.Virtual:
				return emi.ErrMainAccountInvalid.WithDetail("main account is virtual")
			case main.Status == emi.AccountTerminated:
				return emi.ErrMainAccountInvalid.WithDetail("main account is terminated")
			case main.Merchant != a.Merchant || main.User != a.User:
				return emi.ErrMainAccountInvalid.WithDetail("main account of another owner")
			case main.Program != a.Program:
				return emi.ErrMainAccountInvalid.WithDetail("main account of another program")
			}
		}
		if err := s.store.InsertAccount(ctx, a); err != nil {
			return err
		}
		if a.Virtual {
			if !in.SkipIBANGeneration {
				for _, b := range main.Balances {
					if b.IBAN == nil {
						continue
					}
					if err := s.issueVirtualIBAN(ctx, a, b); err != nil {
						return err
					}
				}
			}
		} else {
			for i, cur := range prog.Currencies {
				b := emi.Balance{Token: kernel.NewToken(), Account: a.Token, Position: i, Currency: cur, Overdraft: prog.Overdraft}
				if !in.SkipIBANGeneration {
					if err := s.identify(ctx, &b, prog.Schemes[i]); err != nil {
						return err
					}
				}
				if err := s.store.InsertBalance(ctx, b); err != nil {
					return err
				}
				if b.IBAN != nil {
					if err := s.store.RegisterIBAN(ctx, *b.IBAN, a.Token, b.Token, false); err != nil {
						return err
					}
				}
			}
		}
		if err := s.store.InsertStatusChange(ctx, a.Token, emi.AccountStatusChange{From: "", To: emi.AccountActive, Actor: p.ActorID, At: now}); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "account.create", ResourceType: "account", ResourceToken: a.Token,
			Changes: map[string]any{"program": a.Program, "merchant": a.Merchant, "user": a.User, "main": a.Main,
				"skip_iban_generation": in.SkipIBANGeneration}})
	}, func(ctx context.Context) (emi.Account, error) {
		return s.store.Account(ctx, p.PartnerID, a.Token, false)
	})
}

// identify gives a balance its identifiers from a random serial (sequential
// serials let a partner walk other partners' customers from its own IBAN).
// The check digits and the iban and ukbank rules are those of the serial's
// identifiers as before; uniqueness is the reservation's (ReserveSerial),
// so a serial already drawn or issued is drawn again.
func (s *Accounts) identify(ctx context.Context, b *emi.Balance, scheme string) error {
	switch scheme {
	case emi.SchemeIBANBG:
		for attempt := 0; attempt < 20; attempt++ {
			serial, err := randomSerial(maxBGSerial)
			if err != nil {
				return err
			}
			iban, bic, err := s.ids.BGIBAN(serial)
			if err != nil {
				return emi.Internal(err)
			}
			ok, err := s.store.ReserveSerial(ctx, "bg", serial, iban)
			if err != nil {
				return err
			}
			if ok {
				b.IBAN, b.BIC = &iban, bic
				return nil
			}
		}
		return emi.Internal(errors.New("no free Bulgarian IBAN serial in 20 draws"))
	case emi.SchemeUK:
		for attempt := 0; attempt < 40; attempt++ {
			serial, err := randomSerial(maxUKSerial)
			if err != nil {
				return err
			}
			number, sort, iban, bic, ok, err := s.ids.UKAccount(serial)
			if err != nil {
				return emi.Internal(err)
			}
			if !ok {
				continue // no check digit makes this serial pass the modulus rule
			}
			if ok, err = s.store.ReserveSerial(ctx, "uk", serial, iban); err != nil {
				return err
			}
			if ok {
				b.AccountNumber, b.SortCode, b.IBAN, b.BIC = &number, &sort, &iban, bic
				return nil
			}
		}
		return emi.Internal(errors.New("no free UK account number in 40 draws"))
	}
	return nil
}

// Serial ranges: 8 digits in a Bulgarian IBAN, 7 (and a check digit) in a
// UK account number (ukbank.MaxSerial).
const (
	maxBGSerial = 99_999_999
	maxUKSerial = 9_999_999
)

// randomSerial draws a serial in 1..max from crypto/rand.
func randomSerial(max int64) (int64, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(max))
	if err != nil {
		return 0, emi.Internal(err)
	}
	return n.Int64() + 1, nil
}

// issueVirtualIBAN gives a virtual account its own IBAN routed to a main
// balance, of the same scheme as that balance's IBAN.
func (s *Accounts) issueVirtualIBAN(ctx context.Context, a emi.Account, main emi.Balance) error {
	var iban string
	if main.SortCode != nil {
		var b emi.Balance
		if err := s.identify(ctx, &b, emi.SchemeUK); err != nil {
			return err
		}
		iban = *b.IBAN
	} else {
		var b emi.Balance
		if err := s.identify(ctx, &b, emi.SchemeIBANBG); err != nil {
			return err
		}
		iban = *b.IBAN
	}
	return s.store.RegisterIBAN(ctx, iban, a.Token, main.Token, true)
}

// Details returns an account of the caller (account_details).
func (s *Accounts) Details(ctx context.Context, token string) (emi.Account, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrAccountNotFound)
	if err != nil {
		return emi.Account{}, err
	}
	return s.store.Account(ctx, p.PartnerID, token, false)
}

// List returns a page of the caller's accounts (accounts_list): page from
// 1, limit 1..10, filters merchant, user, program; newest first.
func (s *Accounts) List(ctx context.Context, f emi.AccountFilter) ([]emi.Account, int64, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrForbidden)
	if err != nil {
		return nil, 0, err
	}
	var bad kernel.Problems
	bad.CheckPage(f.Page, f.Limit, 10)
	if f.StartingAfter != "" {
		if _, err := s.store.Account(ctx, p.PartnerID, f.StartingAfter, false); errors.Is(err, emi.ErrAccountNotFound) {
			bad.Add("starting_after", "is not one of your accounts")
		} else if err != nil {
			return nil, 0, err
		}
	}
	if len(bad) > 0 {
		return nil, 0, emi.ErrAccountValidation.WithFields(bad...)
	}
	f.PartnerID = p.PartnerID
	return s.store.Accounts(ctx, f)
}

// SetStatus blocks or unblocks an account (account_status): a terminated
// account refuses any change (13006). Blocking freezes its cards.
func (s *Accounts) SetStatus(ctx context.Context, token, status string) (emi.Account, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrAccountNotFound)
	if err != nil {
		return emi.Account{}, err
	}
	if status != emi.AccountActive && status != emi.AccountBlocked {
		return emi.Account{}, emi.ErrAccountValidation.Field("status", "must be active or blocked")
	}
	return s.changeStatus(ctx, p.PartnerID, token, status, "", p.ActorID)
}

// Terminate terminates an account (account_terminate): final; refused
// while a balance holds money (13007); its virtual accounts are
// terminated with it.
func (s *Accounts) Terminate(ctx context.Context, token string) (emi.Account, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrAccountNotFound)
	if err != nil {
		return emi.Account{}, err
	}
	return s.changeStatus(ctx, p.PartnerID, token, emi.AccountTerminated, "", p.ActorID)
}

// changeStatus applies a status change inside one transaction, with the
// cascade of termination, the history, the event and the audit row.
func (s *Accounts) changeStatus(ctx context.Context, partnerID, token, status, reason, actor string) (emi.Account, error) {
	var out emi.Account
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		a, err := s.store.Account(ctx, partnerID, token, true)
		if err != nil {
			return err
		}
		if a.Status == emi.AccountTerminated {
			return emi.ErrAccountInvalidTransition
		}
		if status == emi.AccountTerminated && !a.Virtual {
			if err := s.checkEmpty(ctx, a); err != nil {
				return err
			}
		}
		if err := s.apply(ctx, a, status, reason, actor); err != nil {
			return err
		}
		if status == emi.AccountTerminated {
			if err := s.cards.TerminateForAccount(ctx, a.Token, "account terminated"); err != nil {
				return err
			}
		}
		if status == emi.AccountTerminated && !a.Virtual {
			vs, err := s.store.VirtualAccounts(ctx, a.Token)
			if err != nil {
				return err
			}
			for _, v := range vs {
				if err := s.apply(ctx, v, emi.AccountTerminated, "main account terminated", actor); err != nil {
					return err
				}
			}
		}
		out, err = s.store.Account(ctx, "", a.Token, false)
		return err
	})
	return out, err
}

func (s *Accounts) apply(ctx context.Context, a emi.Account, status, reason, actor string) error {
	if a.Status == status {
		return nil // idempotent: nothing changes, nothing is sent
	}
	if err := s.store.SetAccountStatus(ctx, a.Token, status); err != nil {
		return err
	}
	if status == emi.AccountTerminated {
		// A staff request to terminate is answered by the termination.
		if err := s.controls.VoidRequest(ctx, TerminationFlow, terminationSubject(a.Token)); err != nil {
			return err
		}
	}
	if err := s.store.InsertStatusChange(ctx, a.Token, emi.AccountStatusChange{From: a.Status, To: status, Reason: reason,
		Actor: actor, At: s.now.At(ctx).UTC()}); err != nil {
		return err
	}
	if _, err := s.events.Emit(ctx, a.PartnerID, emi.EventAccountStatusChanged, "account", a.Token,
		map[string]any{"status": status, "previous_status": a.Status}); err != nil {
		return err
	}
	return s.audit.Record(ctx, emi.AuditEntry{Action: "account.status", ResourceType: "account", ResourceToken: a.Token,
		PartnerID: a.PartnerID, Changes: map[string]any{"from": a.Status, "to": status, "reason": reason}})
}

// Programs returns every program (emi.PermViewAccounts).
func (s *Accounts) Programs(ctx context.Context) ([]emi.Program, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	return s.store.Programs(ctx)
}

// SandboxPrograms are the programs of contract §11.
func SandboxPrograms() []emi.Program {
	groups := map[string][]string{"usage": {"usage_std", "usage_no_atm"}, "fees": {"fees_std"}, "limits": {"limits_std", "limits_high"}, "mcc": {"mcc_std"}}
	defaults := map[string]string{"usage": "usage_std", "fees": "fees_std", "limits": "limits_std", "mcc": "mcc_std"}
	card := func(p emi.Program, bin string) emi.Program {
		p.CardsAllowed, p.CardTypes, p.BINPrefix, p.CardValidityMonths = true, []string{"virtual", "plastic"}, bin, 36
		p.Groups, p.Defaults = groups, defaults
		p.PINBySMS, p.WalletProvisioning = true, true
		return p
	}
	return []emi.Program{
		card(emi.Program{Code: "account_eur", Name: "EUR account", Currencies: []string{"EUR"}, Schemes: []string{emi.SchemeIBANBG}}, "53999401"),
		card(emi.Program{Code: "account_bgn", Name: "BGN account", Currencies: []string{"BGN"}, Schemes: []string{emi.SchemeIBANBG}}, "53999402"),
		card(emi.Program{Code: "account_gbp", Name: "GBP account", Currencies: []string{"GBP"}, Schemes: []string{emi.SchemeUK}}, "53999403"),
		{Code: "account_multi", Name: "EUR and BGN account", Currencies: []string{"EUR", "BGN"}, Schemes: []string{emi.SchemeIBANBG, emi.SchemeIBANBG}},
		card(emi.Program{Code: "card_eur", Name: "EUR cards (non-personalized)", Currencies: []string{"EUR"}, Schemes: []string{emi.SchemeIBANBG}}, "53999404"),
	}
}

// SeedSandbox creates the programs of contract §11 that are missing.
func (s *Accounts) SeedSandbox(ctx context.Context) (int, error) {
	n := 0
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		for _, p := range SandboxPrograms() {
			if _, err := s.store.Program(ctx, p.Code); err == nil {
				continue
			} else if !errors.Is(err, emi.ErrProgramNotFound) {
				return err
			}
			if err := s.store.UpsertProgram(ctx, p); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
