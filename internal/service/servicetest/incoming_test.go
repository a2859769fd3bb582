package servicetest_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// moneyApp is the whole application on a fresh database with a partner;
// when the test ends the ledger must balance: every transaction sums to
// zero per currency and every balance's posted figure is the sum of its
// entries.
type moneyApp struct {
	env *apptest.Env
	p   *apptest.Partner
	// Staff contexts: two who may move money, and three who may not.
	cs, comp, auditor, admin, underwriter context.Context
}

func newMoneyApp(t *testing.T, opts apptest.Options) *moneyApp {
	t.Helper()
	opts.NoSanctions = true
	env := apptest.New(t, opts)
	t.Cleanup(func() { ledgerBalanced(t, env) })
	staff := func(r emi.Role) context.Context {
		return as(emi.StaffUser{ID: kernel.NewToken(), Roles: []emi.Role{r}})
	}
	return &moneyApp{env: env, p: env.NewPartner(t, emi.PartnerCreate{Name: "Money Partner"}),
		cs: staff(emi.RoleCustomerService), comp: staff(emi.RoleCompliance), auditor: staff(emi.RoleAuditor),
		admin: staff(emi.RoleAdmin), underwriter: staff(emi.RoleUnderwriter)}
}

// ledgerBalanced checks the ledger's invariants with the product's own
// verification (emi ledger verify).
func ledgerBalanced(t *testing.T, env *apptest.Env) {
	t.Helper()
	if rep, err := env.App.Ledger.Verify(context.Background()); err != nil || !rep.OK() {
		t.Errorf("ledger verification: %v %v", rep.Problems, err)
	}
}

func (m *moneyApp) partner() context.Context {
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: m.p.KeyID, PartnerID: m.p.ID,
		MasterMerchant: m.p.Merchant})
}

// open opens an account of program for the partner's own merchant (main:
// a virtual account of it).
func (m *moneyApp) open(t *testing.T, program, main string) emi.Account {
	t.Helper()
	a, err := m.env.App.Accounts.Create(m.partner(), emi.AccountCreate{Program: program, Merchant: m.p.Merchant, Main: main})
	if err != nil {
		t.Fatalf("open %s: %v", program, err)
	}
	return a
}

func (m *moneyApp) available(t *testing.T, balance string) int64 {
	t.Helper()
	var n int64
	if err := m.env.App.DB.Get(&n, `SELECT available FROM balances WHERE token = $1`, balance); err != nil {
		t.Fatal(err)
	}
	return n
}

func (m *moneyApp) position(t *testing.T, internal, currency string) int64 {
	t.Helper()
	var n int64
	if err := m.env.App.DB.Get(&n, `SELECT coalesce(sum(amount), 0) FROM ledger_entries WHERE internal = $1 AND currency = $2`,
		internal, currency); err != nil {
		t.Fatal(err)
	}
	return n
}

// park sends a SEPA credit to an unknown IBAN and returns its suspense item.
func (m *moneyApp) park(t *testing.T, minor int64) string {
	t.Helper()
	res, err := m.env.App.Incoming.Credit(m.cs, emi.IncomingCredit{Scheme: emi.SchemeSEPA, Amount: emi.Amount(minor), Currency: "EUR",
		Reference: "lost", Payer: emi.IncomingPayer{Name: "Acme GmbH", IBAN: "DE89370400440532013000"},
		Destination: emi.TransferParty{IBAN: "DE75512108001245126199"}})
	if err != nil || res.Status != emi.IncomingSuspense || res.SuspenseItem == "" {
		t.Fatalf("park: %+v %v", res, err)
	}
	return res.SuspenseItem
}

func (m *moneyApp) setStatus(t *testing.T, account, status string) {
	t.Helper()
	if _, err := m.env.App.Accounts.SetStatus(m.partner(), account, status); err != nil {
		t.Fatalf("status %s: %v", status, err)
	}
}

func wantErr(t *testing.T, what string, err error, target *emi.Error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got %v, want %d %s", what, err, target.Code, target.Key)
	}
}

func TestIncomingCreditCallers(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	acc := m.open(t, "account_eur", "")
	in := emi.IncomingCredit{Scheme: emi.SchemeSEPA, Amount: 100, Currency: "EUR", Payer: emi.IncomingPayer{Name: "A"},
		Destination: emi.TransferParty{IBAN: *acc.Balances[0].IBAN}}
	for _, c := range []struct {
		what string
		ctx  context.Context
	}{{"auditor", m.auditor}, {"administrator", m.admin}, {"underwriter", m.underwriter}, {"nobody", context.Background()}} {
		_, err := m.env.App.Incoming.Credit(c.ctx, in)
		wantErr(t, c.what, err, emi.ErrForbidden)
	}
	for _, ctx := range []context.Context{m.cs, m.comp, m.partner(), emi.WithPrincipal(context.Background(), emi.SystemPrincipal("bank-feed"))} {
		if res, err := m.env.App.Incoming.Credit(ctx, in); err != nil || res.Status != emi.IncomingCredited {
			t.Fatalf("credit: %+v %v", res, err)
		}
	}
	if got := m.available(t, acc.Balances[0].Token); got != 400 {
		t.Fatalf("available %d", got)
	}
	// Staff see the whole transfer; a partner its own view of it.
	res, err := m.env.App.Incoming.Credit(m.cs, in)
	if err != nil || res.Transfer == nil {
		t.Fatalf("staff credit: %+v %v", res, err)
	}
	if res.Transfer.DestinationPartner != m.p.ID || res.Transfer.Counterparty.Name != "A" {
		t.Fatalf("staff view %+v", res.Transfer)
	}
}

func TestIncomingCreditProduction(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{Configure: func(c *config.Config) { c.Mode = config.ModeProduction }})
	acc := m.open(t, "account_eur", "")
	in := emi.IncomingCredit{Scheme: emi.SchemeSEPA, Amount: 100, Currency: "EUR", Payer: emi.IncomingPayer{Name: "A"},
		Destination: emi.TransferParty{IBAN: *acc.Balances[0].IBAN}}
	for _, ctx := range []context.Context{m.cs, m.partner()} {
		_, err := m.env.App.Incoming.Credit(ctx, in)
		wantErr(t, "simulation in production", err, emi.ErrRouteNotFound)
	}
	// A bank feed (the system) credits in production.
	if res, err := m.env.App.Incoming.Credit(emi.WithPrincipal(context.Background(), emi.SystemPrincipal("bank-feed")), in); err != nil ||
		res.Status != emi.IncomingCredited {
		t.Fatalf("system credit: %+v %v", res, err)
	}
}

// assign has one staff member request the assignment of item to to and a
// second, distinct one approve it.
func (m *moneyApp) assign(t *testing.T, requester, approver context.Context, item, to, reason string) emi.Transfer {
	t.Helper()
	inc := m.env.App.Incoming
	a, err := inc.RequestSuspenseAssignment(requester, item, to, reason)
	if err != nil {
		t.Fatalf("request the assignment to %s: %v", to, err)
	}
	_, tr, err := inc.DecideSuspenseAssignment(approver, a.Token, true, "")
	if err != nil || tr == nil {
		t.Fatalf("approve the assignment to %s: %v", to, err)
	}
	return *tr
}

func TestSuspenseAssign(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	inc := m.env.App.Incoming
	eur, gbp, blocked := m.open(t, "account_eur", ""), m.open(t, "account_gbp", ""), m.open(t, "account_eur", "")
	m.setStatus(t, blocked.Token, emi.AccountBlocked)
	iban, bal := *eur.Balances[0].IBAN, eur.Balances[0].Token
	item := m.park(t, 1250)

	// Who may see, request and decide.
	if _, _, err := inc.SuspenseItems(m.auditor, true, 1, emi.SortOrder{}); err != nil {
		t.Fatalf("auditor list: %v", err)
	}
	_, _, err := inc.SuspenseItems(m.underwriter, true, 1, emi.SortOrder{})
	wantErr(t, "underwriter list", err, emi.ErrForbidden)
	for _, ctx := range []context.Context{m.auditor, m.admin, m.underwriter} {
		_, err := inc.RequestSuspenseAssignment(ctx, item, iban, "found the customer")
		wantErr(t, "request without the permission", err, emi.ErrForbidden)
		_, _, err = inc.DecideSuspenseAssignment(ctx, kernel.NewToken(), true, "")
		wantErr(t, "approve without the permission", err, emi.ErrForbidden)
		wantErr(t, "return without the permission", inc.ReturnSuspense(ctx, item, "unknown"), emi.ErrForbidden)
	}

	// Refused requests record nothing.
	for _, c := range []struct {
		what, to, reason string
		want             *emi.Error
	}{
		{"no reason", iban, " ", emi.ErrReviewValidation},
		{"not an identifier", "somewhere", "found the customer", emi.ErrReviewValidation},
		{"unknown IBAN", "DE75512108001245126199", "found the customer", emi.ErrDestinationNotFound},
		{"unknown token", kernel.NewToken(), "found the customer", emi.ErrDestinationNotFound},
		{"other currency", gbp.Token, "found the customer", emi.ErrCurrencyMismatch},
		{"blocked account", blocked.Token, "found the customer", emi.ErrTransferAccountUnusable},
	} {
		_, err := inc.RequestSuspenseAssignment(m.cs, item, c.to, c.reason)
		wantErr(t, c.what, err, c.want)
	}
	_, err = inc.RequestSuspenseAssignment(m.cs, kernel.NewToken(), iban, "found the customer")
	wantErr(t, "unknown item", err, emi.ErrSuspenseNotFound)
	_, _, err = inc.DecideSuspenseAssignment(m.comp, kernel.NewToken(), true, "")
	wantErr(t, "unknown request", err, emi.ErrSuspenseAssignmentNotFound)
	var requests int
	_ = m.env.App.DB.Get(&requests, `SELECT count(*) FROM suspense_assignment_requests`)
	if requests != 0 || m.available(t, bal) != 0 || m.position(t, emi.LedgerSuspense, "EUR") != 1250 {
		t.Fatalf("a refused request left %d requests or moved money", requests)
	}

	// Requested by IBAN (spaces, lower case): nothing moves, the item stays
	// open with its pending request, listed.
	a, err := inc.RequestSuspenseAssignment(m.cs, item, " "+iban[:4]+" "+iban[4:]+" ", "customer called with the payment slip")
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	if a.Status != emi.AssignmentPending || a.Account != eur.Token || a.Balance != bal || a.Target != iban || a.RequestedBy != staffOf(m.cs) {
		t.Fatalf("request %+v", a)
	}
	if m.available(t, bal) != 0 || m.position(t, emi.LedgerSuspense, "EUR") != 1250 {
		t.Fatal("a request moved money")
	}
	open, _, err := inc.SuspenseItems(m.auditor, true, 1, emi.SortOrder{})
	if err != nil || len(open) != 1 || open[0].Status != emi.SuspenseOpen || open[0].Pending == nil ||
		open[0].Pending.Token != a.Token || open[0].Pending.Reason != "customer called with the payment slip" {
		t.Fatalf("open items %+v %v", open, err)
	}
	// One pending request per item; and it is not returned meanwhile.
	_, err = inc.RequestSuspenseAssignment(m.comp, item, bal, "another idea")
	wantErr(t, "a second request", err, emi.ErrSuspenseAssignmentPending)
	wantErr(t, "return while an assignment is pending", inc.ReturnSuspense(m.comp, item, "sender recalled it"),
		emi.ErrSuspenseAssignmentPending)

	// A rejection needs a reason; an approval's note is at most 2,000 characters.
	_, _, err = inc.DecideSuspenseAssignment(m.comp, a.Token, false, "")
	wantErr(t, "reject without a reason", err, emi.ErrReviewValidation)

	// Approved by a second person: posted now.
	decided, tr, err := inc.DecideSuspenseAssignment(m.comp, a.Token, true, "checked the slip")
	if err != nil || tr == nil {
		t.Fatalf("approve: %v", err)
	}
	if decided.Status != emi.AssignmentApproved || decided.DecidedBy != staffOf(m.comp) || decided.Transfer != tr.Token {
		t.Fatalf("decided %+v", decided)
	}
	if tr.Type != emi.TransferIncoming || tr.Status != emi.TransferCompleted || tr.Amount != 1250 || tr.DestinationAccount != eur.Token ||
		tr.Counterparty.Name != "Acme GmbH" || tr.Counterparty.IBAN != "DE89370400440532013000" || tr.Reference != "lost" {
		t.Fatalf("transfer %+v", tr)
	}
	if m.available(t, bal) != 1250 || m.position(t, emi.LedgerSuspense, "EUR") != 0 {
		t.Fatal("the approval did not move suspense -> customer")
	}
	var row struct {
		Status   string `db:"status"`
		Transfer string `db:"transfer"`
		Kind     string `db:"kind"`
		By       string `db:"resolved_by"`
		Reason   string `db:"resolution_reason"`
	}
	if err := m.env.App.DB.Get(&row, `SELECT s.status, s.transfer::text AS transfer, t.kind, s.resolved_by::text AS resolved_by, s.resolution_reason
		FROM suspense_items s JOIN ledger_transactions t ON t.id = s.resolution_txn WHERE s.token = $1`, item); err != nil {
		t.Fatal(err)
	}
	if row.Status != emi.SuspenseAssigned || row.Transfer != tr.Token || row.Kind != emi.TxnSuspenseAssign ||
		row.By != staffOf(m.comp) || row.Reason != "customer called with the payment slip" {
		t.Fatalf("item %+v", row)
	}
	// The event goes out once, on approval; the audit log has the request
	// and the approval.
	var events int
	_ = m.env.App.DB.Get(&events, `SELECT count(*) FROM events WHERE partner_id = $1 AND type = 'transfer.completed' AND resource_token = $2`,
		m.p.ID, tr.Token)
	if events != 1 {
		t.Fatalf("events %d", events)
	}
	audits := auditActions(t, m, item)
	if len(audits) != 3 || audits[0] != "incoming.suspense" || audits[1] != "suspense.assign_requested" || audits[2] != "suspense.assign" {
		t.Fatalf("audit %v", audits)
	}

	// Resolved once; a decided request is not decided again.
	_, err = inc.RequestSuspenseAssignment(m.comp, item, iban, "again")
	wantErr(t, "request an assigned item", err, emi.ErrSuspenseResolved)
	wantErr(t, "return an assigned item", inc.ReturnSuspense(m.comp, item, "again"), emi.ErrSuspenseResolved)
	_, _, err = inc.DecideSuspenseAssignment(m.auditor, a.Token, true, "")
	wantErr(t, "auditor", err, emi.ErrForbidden)
	_, _, err = inc.DecideSuspenseAssignment(newStaffUser(t, m, sys(), emi.RoleCompliance), a.Token, true, "")
	wantErr(t, "approve twice", err, emi.ErrSuspenseAssignmentDecided)

	// By balance token and by account token; to a virtual account's IBAN.
	m.assign(t, m.comp, m.cs, m.park(t, 100), bal, "by balance")
	m.assign(t, m.comp, m.cs, m.park(t, 100), eur.Token, "by account")
	v := m.open(t, "account_eur", eur.Token)
	tr2 := m.assign(t, m.comp, m.cs, m.park(t, 100), v.VirtualIBANs["EUR"], "to the virtual IBAN")
	if tr2.DestinationAccount != v.Token || tr2.DestinationBalance != bal {
		t.Fatalf("virtual: %+v", tr2)
	}
	if got := m.available(t, bal); got != 1550 {
		t.Fatalf("available %d", got)
	}
	// Unblocked, the blocked account takes an item.
	m.setStatus(t, blocked.Token, emi.AccountActive)
	m.assign(t, m.cs, m.comp, m.park(t, 100), blocked.Token, "unblocked")

	open, total, err := inc.SuspenseItems(m.auditor, true, 1, emi.SortOrder{})
	if err != nil || len(open) != 0 || total != 0 {
		t.Fatalf("open items %d %d %v", len(open), total, err)
	}
	done, total, err := inc.SuspenseItems(m.auditor, false, 1, emi.SortOrder{})
	if err != nil || total != 5 || done[0].Status != emi.SuspenseAssigned || done[0].ResolvedAt == nil ||
		done[0].AssignRequestedBy != staffOf(m.cs) || done[0].ResolvedBy != staffOf(m.comp) {
		t.Fatalf("resolved items %d %+v %v", total, done, err)
	}
}

// auditActions lists the audit rows of a suspense item, oldest first.
func auditActions(t *testing.T, m *moneyApp, item string) []string {
	t.Helper()
	var out []string
	if err := m.env.App.DB.Select(&out, `SELECT action FROM audit_log WHERE resource_type = 'suspense_item' AND resource_token = $1
		ORDER BY id`, item); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSuspenseReturn(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	inc := m.env.App.Incoming
	item := m.park(t, 700)
	wantErr(t, "no reason", inc.ReturnSuspense(m.comp, item, ""), emi.ErrReviewValidation)
	wantErr(t, "unknown item", inc.ReturnSuspense(m.comp, kernel.NewToken(), "no such customer"), emi.ErrSuspenseNotFound)
	if err := inc.ReturnSuspense(m.comp, item, "no such customer"); err != nil {
		t.Fatalf("return: %v", err)
	}
	if m.position(t, emi.LedgerSuspense, "EUR") != 0 || m.position(t, emi.LedgerIncomingClearing, "EUR") != 0 {
		t.Fatal("the return did not move suspense -> incoming clearing")
	}
	var kind, status string
	if err := m.env.App.DB.QueryRow(`SELECT t.kind, s.status FROM suspense_items s JOIN ledger_transactions t ON t.id = s.resolution_txn
		WHERE s.token = $1`, item).Scan(&kind, &status); err != nil || kind != emi.TxnSuspenseReturn || status != emi.SuspenseReturned {
		t.Fatalf("returned item: %s %s %v", kind, status, err)
	}
	wantErr(t, "return twice", inc.ReturnSuspense(m.cs, item, "again"), emi.ErrSuspenseResolved)
	var audits int
	_ = m.env.App.DB.Get(&audits, `SELECT count(*) FROM audit_log WHERE action = 'suspense.return' AND resource_token = $1`, item)
	if audits != 1 {
		t.Fatalf("audit rows %d", audits)
	}
}

// Two staff members resolving the same item at once: exactly one wins, the
// other is told it is resolved or decided, and the money moves once. Even
// rounds race an approval against a return (refused while the request is
// pending) and a rejection; odd rounds race two approvals by two distinct
// people.
func TestSuspenseResolvedOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	inc := m.env.App.Incoming
	acc := m.open(t, "account_eur", "")
	other := newStaffUser(t, m, sys(), emi.RoleCompliance)
	const n = 12
	assigned := int64(0)
	for i := range n {
		item := m.park(t, 100)
		a, err := inc.RequestSuspenseAssignment(m.cs, item, acc.Token, "found the customer")
		if err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, 3)
		var tr [2]*emi.Transfer
		wg.Add(3)
		go func() {
			defer wg.Done()
			<-start
			_, tr[0], errs[0] = inc.DecideSuspenseAssignment(m.comp, a.Token, true, "")
		}()
		go func() {
			defer wg.Done()
			<-start
			if i%2 == 0 {
				_, tr[1], errs[1] = inc.DecideSuspenseAssignment(other, a.Token, false, "wrong customer")
			} else {
				_, tr[1], errs[1] = inc.DecideSuspenseAssignment(other, a.Token, true, "")
			}
		}()
		go func() {
			defer wg.Done()
			<-start
			errs[2] = inc.ReturnSuspense(other, item, "unknown customer")
		}()
		close(start)
		wg.Wait()
		wins := 0
		for j, err := range errs[:2] {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, emi.ErrSuspenseAssignmentDecided):
				t.Fatalf("round %d, decision %d: %v", i, j, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d decisions succeeded (%v)", i, wins, errs)
		}
		// The return ran before the decision (refused: pending), or after a
		// rejection (it wins), or after an approval (resolved).
		rejected := i%2 == 0 && errs[1] == nil
		switch err := errs[2]; {
		case err == nil && !rejected:
			t.Fatalf("round %d: the item was returned although its assignment was approved", i)
		case err != nil && !errors.Is(err, emi.ErrSuspenseAssignmentPending) && !errors.Is(err, emi.ErrSuspenseResolved):
			t.Fatalf("round %d: return: %v", i, err)
		}
		for _, x := range tr {
			if x != nil {
				assigned += x.Amount
			}
		}
	}
	if got := m.available(t, acc.Balances[0].Token); got != assigned {
		t.Fatalf("available %d, assigned %d", got, assigned)
	}
	var transfers int64
	_ = m.env.App.DB.Get(&transfers, `SELECT count(*) FROM transfers WHERE destination_account = $1`, acc.Token)
	var open int64
	_ = m.env.App.DB.Get(&open, `SELECT coalesce(sum(amount), 0) FROM suspense_items WHERE status = 'open'`)
	if transfers*100 != assigned || m.position(t, emi.LedgerSuspense, "EUR") != open {
		t.Fatalf("%d transfers for %d assigned; suspense %d, open items %d", transfers, assigned, m.position(t, emi.LedgerSuspense, "EUR"), open)
	}
	var approvals int
	_ = m.env.App.DB.Get(&approvals, `SELECT count(*) FROM audit_log WHERE action = 'suspense.assign'`)
	if int64(approvals)*100 != assigned {
		t.Fatalf("%d approval audit rows for %d assigned", approvals, assigned)
	}
}

func TestAdjustmentsFourEyes(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	adj := m.env.App.Adjustments
	acc := m.open(t, "account_eur", "")
	bal := acc.Balances[0].Token
	req := func(ctx context.Context, dir string, minor int64) (emi.Adjustment, error) {
		return adj.Request(ctx, emi.AdjustmentRequest{Account: acc.Token, Currency: "EUR", Direction: dir, Amount: minor,
			Reason: "correction of a duplicated fee"})
	}

	// Who may.
	for _, ctx := range []context.Context{m.auditor, m.admin, m.underwriter} {
		_, err := req(ctx, emi.AdjustmentCredit, 100)
		wantErr(t, "request without the permission", err, emi.ErrForbidden)
	}
	if _, err := adj.Pending(m.auditor, ""); err != nil {
		t.Fatalf("auditor sees the queue: %v", err)
	}
	_, err := adj.Pending(m.underwriter, "")
	wantErr(t, "underwriter queue", err, emi.ErrForbidden)

	// A credit: requested by customer service, approved by compliance.
	a, err := req(m.cs, emi.AdjustmentCredit, 1000)
	if err != nil || a.Status != emi.AdjustmentPending {
		t.Fatalf("request: %+v %v", a, err)
	}
	if m.available(t, bal) != 0 {
		t.Fatal("a request moved money")
	}
	_, err = adj.Decide(m.cs, a.Token, true, "")
	wantErr(t, "self-approval", err, emi.ErrFourEyes)
	_, err = adj.Decide(m.auditor, a.Token, true, "")
	wantErr(t, "auditor approval", err, emi.ErrForbidden)
	pending, _ := adj.Pending(m.comp, acc.Token)
	if len(pending) != 1 || pending[0].Token != a.Token || pending[0].RequestedBy != staffOf(m.cs) {
		t.Fatalf("pending %+v", pending)
	}
	done, err := adj.Decide(m.comp, a.Token, true, "checked the fee invoice")
	if err != nil || done.Status != emi.AdjustmentApproved || done.DecidedBy != staffOf(m.comp) || done.Txn == 0 {
		t.Fatalf("approve: %+v %v", done, err)
	}
	if m.available(t, bal) != 1000 || m.position(t, emi.LedgerAdjustments, "EUR") != -1000 {
		t.Fatal("the approval did not post adjustments -> customer")
	}
	var kind string
	_ = m.env.App.DB.Get(&kind, `SELECT kind FROM ledger_transactions WHERE id = $1`, done.Txn)
	if kind != emi.TxnAdjustment {
		t.Fatalf("ledger kind %s", kind)
	}
	_, err = adj.Decide(m.cs, a.Token, true, "")
	wantErr(t, "approve twice", err, emi.ErrAdjustmentDecided)
	_, err = adj.Decide(m.cs, a.Token, false, "too late")
	wantErr(t, "reject an approved one", err, emi.ErrAdjustmentDecided)
	var audits []string
	_ = m.env.App.DB.Select(&audits, `SELECT action FROM audit_log WHERE resource_type = 'account' AND resource_token = $1
		AND action LIKE 'adjustment.%' ORDER BY id`, acc.Token)
	if len(audits) != 2 || audits[0] != "adjustment.requested" || audits[1] != "adjustment.approved" {
		t.Fatalf("audit %v", audits)
	}

	// A debit never overdraws: refused at the request...
	_, err = req(m.comp, emi.AdjustmentDebit, 1001)
	wantErr(t, "debit over available", err, emi.ErrInsufficientFunds)
	// ...and at the approval when the money went meanwhile; the request stays pending.
	d, err := req(m.comp, emi.AdjustmentDebit, 1000)
	if err != nil {
		t.Fatalf("debit request: %v", err)
	}
	m.env.PayOut(t, acc.Token, bal, "EUR", 1)
	_, err = adj.Decide(m.cs, d.Token, true, "")
	wantErr(t, "debit approval over available", err, emi.ErrInsufficientFunds)
	if still, _ := adj.Pending(m.cs, acc.Token); len(still) != 1 {
		t.Fatalf("pending after a refused approval: %d", len(still))
	}
	// Withdrawn by the requester, with a reason.
	_, err = adj.Decide(m.comp, d.Token, false, "")
	wantErr(t, "reject without a reason", err, emi.ErrReviewValidation)
	r, err := adj.Decide(m.comp, d.Token, false, "wrong amount")
	if err != nil || r.Status != emi.AdjustmentWithdrawn || r.Txn != 0 || r.DecisionNote != "wrong amount" {
		t.Fatalf("reject: %+v %v", r, err)
	}
	if m.available(t, bal) != 999 {
		t.Fatal("a rejection moved money")
	}
	// A debit within available, approved.
	d, _ = req(m.comp, emi.AdjustmentDebit, 999)
	if _, err := adj.Decide(m.cs, d.Token, true, ""); err != nil || m.available(t, bal) != 0 {
		t.Fatalf("debit: %v", err)
	}
	// Even an overdraft balance is not overdrawn by an adjustment.
	if _, err := m.env.App.DB.Exec(`UPDATE balances SET overdraft = true WHERE token = $1`, bal); err != nil {
		t.Fatal(err)
	}
	_, err = req(m.comp, emi.AdjustmentDebit, 1)
	wantErr(t, "overdraft balance", err, emi.ErrInsufficientFunds)

	decided, err := adj.Decided(m.auditor)
	if err != nil || len(decided) != 3 {
		t.Fatalf("decided %d %v", len(decided), err)
	}
}

func TestAdjustmentRules(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	adj := m.env.App.Adjustments
	acc, gbp := m.open(t, "account_eur", ""), m.open(t, "account_gbp", "")
	good := emi.AdjustmentRequest{Account: acc.Token, Currency: "EUR", Direction: emi.AdjustmentCredit, Amount: 500, Reason: "goodwill"}

	bad := good
	bad.Direction, bad.Amount, bad.Reason = "sideways", 0, "x"
	_, err := adj.Request(m.cs, bad)
	wantErr(t, "invalid", err, emi.ErrReviewValidation)
	if e := emi.AsError(err); len(e.Fields) != 3 {
		t.Fatalf("fields %+v", e.Fields)
	}
	bad = good
	bad.Account = kernel.NewToken()
	_, err = adj.Request(m.cs, bad)
	wantErr(t, "unknown account", err, emi.ErrAccountNotFound)
	bad = good
	bad.Account = gbp.Token
	_, err = adj.Request(m.cs, bad)
	wantErr(t, "currency not held", err, emi.ErrCurrencyMismatch)
	_, err = adj.Decide(m.cs, kernel.NewToken(), true, "")
	wantErr(t, "unknown adjustment", err, emi.ErrAdjustmentNotFound)

	// A blocked account is corrected too; a terminated one is not.
	m.setStatus(t, acc.Token, emi.AccountBlocked)
	a, err := adj.Request(m.cs, good)
	if err != nil {
		t.Fatalf("blocked account: %v", err)
	}
	if _, err := adj.Decide(m.comp, a.Token, true, ""); err != nil {
		t.Fatalf("approve on a blocked account: %v", err)
	}
	empty := m.open(t, "account_eur", "")
	pendingOnEmpty, err := adj.Request(m.cs, emi.AdjustmentRequest{Account: empty.Token, Currency: "EUR", Direction: emi.AdjustmentCredit,
		Amount: 1, Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.env.App.Accounts.Terminate(m.partner(), empty.Token); err != nil {
		t.Fatalf("terminate: %v", err)
	}
	_, err = adj.Request(m.cs, emi.AdjustmentRequest{Account: empty.Token, Currency: "EUR", Direction: emi.AdjustmentCredit, Amount: 1, Reason: "test"})
	wantErr(t, "terminated account", err, emi.ErrTransferAccountUnusable)
	_, err = adj.Decide(m.comp, pendingOnEmpty.Token, true, "")
	wantErr(t, "approval on a terminated account", err, emi.ErrTransferAccountUnusable)

	// A virtual account: its main balance moves, the entry shows on it.
	main := m.open(t, "account_eur", "")
	v := m.open(t, "account_eur", main.Token)
	a, err = adj.Request(m.cs, emi.AdjustmentRequest{Account: v.Token, Currency: "EUR", Direction: emi.AdjustmentCredit, Amount: 300, Reason: "refund"})
	if err != nil || a.Balance != main.Balances[0].Token || a.Account != v.Token {
		t.Fatalf("virtual: %+v %v", a, err)
	}
	if _, err := adj.Decide(m.comp, a.Token, true, ""); err != nil {
		t.Fatal(err)
	}
	var shownOn string
	_ = m.env.App.DB.Get(&shownOn, `SELECT account::text FROM ledger_entries WHERE balance = $1`, main.Balances[0].Token)
	if shownOn != v.Token || m.available(t, main.Balances[0].Token) != 300 {
		t.Fatalf("virtual entry on %s", shownOn)
	}

	// The database refuses an approval by the requester too.
	a, _ = adj.Request(m.cs, good)
	if _, err := m.env.App.DB.Exec(`UPDATE control_requests SET status = 'approved', decided_by = proposed_by, decided_at = now()
		WHERE id = $1`, a.Token); err == nil {
		t.Fatal("the database let the requester approve")
	}
}

// Two different staff members approving the same request at once: it is
// posted once.
func TestAdjustmentDecidedOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	adj := m.env.App.Adjustments
	acc := m.open(t, "account_eur", "")
	third := as(emi.StaffUser{ID: kernel.NewToken(), Roles: []emi.Role{emi.RoleCustomerService}})
	for i := range 8 {
		a, err := adj.Request(m.cs, emi.AdjustmentRequest{Account: acc.Token, Currency: "EUR", Direction: emi.AdjustmentCredit,
			Amount: 100, Reason: "goodwill"})
		if err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for j, ctx := range []context.Context{m.comp, third} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[j] = adj.Decide(ctx, a.Token, j == 0 || i%2 == 0, "decided")
			}()
		}
		close(start)
		wg.Wait()
		wins := 0
		for _, err := range errs {
			if err == nil {
				wins++
			} else if !errors.Is(err, emi.ErrAdjustmentDecided) {
				t.Fatalf("round %d: %v", i, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d decisions succeeded", i, wins)
		}
	}
	var approved int64
	_ = m.env.App.DB.Get(&approved, `SELECT count(*) FROM control_requests WHERE control = 'adjustment.approve' AND status = 'approved'`)
	if got := m.available(t, acc.Balances[0].Token); got != approved*100 {
		t.Fatalf("available %d for %d approvals", got, approved)
	}
}

// StaffOf is the staff id of a context.
func staffOf(ctx context.Context) string {
	p, _ := emi.PrincipalFrom(ctx)
	return p.ActorID
}
