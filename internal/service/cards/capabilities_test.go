package cards_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/servicetest"
)

// ruleRefusal reports whether err is the service refusing an action by a
// rule (the card's state, the person's role, the program), as opposed to
// the request's input.
func ruleRefusal(err error) bool {
	return errors.Is(err, emi.ErrCardInvalidTransition) || errors.Is(err, emi.ErrForbidden) ||
		errors.Is(err, emi.ErrCardProgramMismatch)
}

// cardCall runs one card action as ctx with input that is valid whatever
// the card, so that only a rule can refuse it.
func (b *blockApp) cardCall(ctx context.Context, act emi.CardAction, tok string) error {
	cards := b.env.App.Cards
	const why = "capability test"
	var err error
	switch act {
	case emi.CardActivate:
		_, err = cards.Activate(ctx, tok, "", why)
	case emi.CardBlock:
		_, err = cards.Block(ctx, tok, emi.BlockCustomerRequest, why)
	case emi.CardUnblock:
		_, err = cards.SetStatus(ctx, tok, emi.CardActive, why)
	case emi.CardTerminate:
		_, err = cards.Terminate(ctx, tok, why)
	case emi.CardReplace:
		_, err = cards.Replace(ctx, tok, "", why)
	case emi.CardConvert:
		_, err = cards.Convert(ctx, tok, &emi.Delivery{FirstName: "Ana", LastName: "Ivanova", Address1: "1 Vitosha Blvd",
			City: "Sofia", Zip: "1000", Country: "BG"}, why)
	case emi.CardAssign:
		_, err = cards.Assign(ctx, tok, b.account, "", why)
	case emi.CardSetGroups:
		none := ""
		_, err = cards.SetGroups(ctx, tok, emi.CardGroups{Usage: &none}, why)
	case emi.CardSet3DS:
		_, err = cards.Enrol3DS(ctx, tok, emi.ThreeDSEnrol{Biometric: true}, why)
	case emi.CardResetPIN:
		_, err = cards.ResetPIN(ctx, tok, why)
	case emi.CardSendPIN:
		_, err = cards.SendPIN(ctx, tok, why)
		if errors.Is(err, emi.ErrCardNoMobile) || errors.Is(err, emi.ErrPINSMSHold) || errors.Is(err, emi.ErrSMSUnavailable) {
			err = nil // about the cardholder's number or the SMS provider, not a rule of the card
		}
	case emi.CardProvision:
		_, err = cards.ProvisionWallet(ctx, tok, "apple_pay", "Ana's phone")
	default:
		return errors.New("no call for " + string(act))
	}
	return err
}

// freshCard is a new virtual card on a new account of the partner's
// merchant (program account_eur), active and activated.
func (b *blockApp) freshCard(t *testing.T) emi.Card { return b.freshCardOf(t, "account_eur") }

func (b *blockApp) freshCardOf(t *testing.T, program string) emi.Card {
	t.Helper()
	acc, err := b.env.App.Accounts.Create(b.partner(), emi.AccountCreate{Program: program, Merchant: b.p.Merchant})
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.env.App.Cards.Create(b.partner(), emi.CardCreate{Account: acc.Token, Type: emi.CardVirtual})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCapabilitiesAnswerWhatTheServiceDoes: for every card state, every
// staff role and every action a person takes, Capabilities allows the
// action exactly when the service does it, and refuses it exactly when
// the service refuses it by a rule (the card's state, the role, the
// program). The back office shows the forms of the allowed actions only,
// so a form it shows is one the service accepts. A refused action is
// tried on the card itself (a refusal changes nothing); an allowed one on
// a fresh card in the same state.
func TestCapabilitiesAnswerWhatTheServiceDoes(t *testing.T) {
	t.Parallel()
	b := newBlockApp(t)
	cards := b.env.App.Cards
	block := func(code string) func(t *testing.T) emi.Card {
		return func(t *testing.T) emi.Card {
			c := b.freshCard(t)
			if _, err := cards.Block(b.cs, c.Token, code, "set up"); err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	// A program that issues virtual cards only, sends no PIN by SMS and
	// pushes no card to wallets: the program's refusals.
	b.env.App.DB.MustExec(`CREATE TEMP TABLE plain AS SELECT * FROM programs WHERE code = 'account_eur';
		UPDATE plain SET code = 'eur_plain', card_types = '{virtual}', pin_by_sms = false, wallet_provisioning = false;
		INSERT INTO programs SELECT * FROM plain; DROP TABLE plain`)
	states := []struct {
		name string
		make func(t *testing.T) emi.Card
	}{
		{"active", b.freshCard},
		{"active, of a plain program", func(t *testing.T) emi.Card { return b.freshCardOf(t, "eur_plain") }},
		{"blocked at the customer's request", block(emi.BlockCustomerRequest)},
		{"blocked on suspicion of fraud", block(emi.BlockFraudSuspected)},
		{"reported stolen", block(emi.BlockStolen)},
		{"replaced", func(t *testing.T) emi.Card {
			c := block(emi.BlockLost)(t)
			if _, err := cards.Replace(b.cs, c.Token, "", "set up"); err != nil {
				t.Fatal(err)
			}
			return c
		}},
	}
	admin := servicetest.As(emi.StaffUser{ID: kernel.NewToken(), Roles: []emi.Role{emi.RoleAdmin}})
	roles := []struct {
		name string
		ctx  context.Context
	}{{"customer service", b.cs}, {"auditor", b.auditor}, {"admin", admin}}
	for _, st := range states {
		for _, role := range roles {
			c := st.make(t)
			view, err := cards.Get(b.cs, c.Token)
			if err != nil {
				t.Fatal(err)
			}
			caps := cards.Capabilities(role.ctx, view)
			for _, act := range emi.CardActions {
				if act == emi.CardPay || act == emi.CardReveal {
					continue // the network's; and the reveal needs a second factor (TestStaffReveal…)
				}
				cp, ok := caps.Actions[act]
				if !ok {
					t.Errorf("%s, %s: no answer for %s", st.name, role.name, act)
					continue
				}
				where := st.name + ", " + role.name + ", " + string(act)
				if !cp.Allowed && cp.Reason == "" {
					t.Errorf("%s: refused without a reason", where)
				}
				tok := c.Token
				if cp.Allowed {
					tok = st.make(t).Token
				}
				err := b.cardCall(role.ctx, act, tok)
				noop := strings.HasPrefix(cp.Reason, "nothing to do")
				switch {
				case cp.Allowed && err != nil:
					t.Errorf("%s: the back office offers it, the service answers %v", where, err)
				case !cp.Allowed && noop && err != nil:
					t.Errorf("%s: refused as changing nothing (%s), and the service refuses it: %v", where, cp.Reason, err)
				case !cp.Allowed && !noop && !ruleRefusal(err):
					t.Errorf("%s: refused (%s), and the service answers %v", where, cp.Reason, err)
				}
			}
		}
	}
}
