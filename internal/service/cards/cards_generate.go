package cards

import (
	"context"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// CardGenerator is what the benchmark generator needs from the store.
type CardGenerator interface {
	AccountsWithoutCard(ctx context.Context, partnerID, after string, limit int) ([]emi.Account, error)
	CopyCards(ctx context.Context, cards []emi.Card, sealed []SealedCard) error
}

// Generate issues a virtual card, with sealed data like any other, to
// every eligible account of the partner that has none (sandbox benchmark
// data, `emi generate cards`). It bypasses the API's per-request work but
// not the card data protection. At most max cards are issued (max <= 0:
// no limit). Returns the number of cards issued.
func (s *Cards) Generate(ctx context.Context, gen CardGenerator, partnerID string, max int, progress func(int)) (int, error) {
	progs := map[string]emi.Program{}
	seen := map[string]bool{}
	n, after := 0, ""
	for {
		batch := 5000
		if max > 0 {
			batch = min(batch, max-n)
		}
		if batch <= 0 {
			return n, nil
		}
		accs, err := gen.AccountsWithoutCard(ctx, partnerID, after, batch)
		if err != nil || len(accs) == 0 {
			return n, err
		}
		cards := make([]emi.Card, 0, len(accs))
		sealed := make([]SealedCard, 0, len(accs))
		for _, acc := range accs {
			after = acc.Token
			prog, ok := progs[acc.Program]
			if !ok {
				if prog, err = s.accounts.Program(ctx, acc.Program); err != nil {
					return n, err
				}
				progs[acc.Program] = prog
			}
			if programAllows(prog, emi.CardVirtual) != nil || prog.BINPrefix == "" {
				continue
			}
			now := acc.CreatedAt.Add(time.Second)
			c := emi.Card{Token: kernel.NewToken(), PartnerID: partnerID, Program: prog.Code, Account: acc.Token, User: acc.User,
				Merchant: acc.Merchant, Type: emi.CardVirtual, Status: emi.CardActive, Activated: true, Groups: map[string]string{},
				CreatedAt: now, ActivatedAt: &now}
			for kind, code := range prog.Defaults {
				c.Groups[kind] = code
			}
			c.ExpiryMonth, c.ExpiryYear = expiryFrom(now, prog.CardValidityMonths)
			var pan string
			for pan = NewPAN(prog.BINPrefix); seen[pan]; pan = NewPAN(prog.BINPrefix) {
			}
			seen[pan] = true
			sc, err := s.seal(c.Token, pan, secretDigits(3), secretDigits(4))
			if err != nil {
				return n, err
			}
			c.First6, c.Last4 = pan[:6], pan[12:]
			cards = append(cards, c)
			sealed = append(sealed, sc)
		}
		if err := gen.CopyCards(ctx, cards, sealed); err != nil {
			return n, err
		}
		n += len(cards)
		if progress != nil {
			progress(n)
		}
	}
}
