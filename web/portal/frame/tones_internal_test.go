package frame

import (
	"testing"

	"emi/internal/emi"
)

// The badge colours of every status, as the per-screen functions (the
// first eight, then cardTone, walletTone, deliveryTone, riskTone and the
// adjustment and text maps, the audit outcome switch) gave them before they became one table: a
// colour that changes is a decision, not a side effect of the fold.
func TestBadgeTonesAreTheOnesTheScreensHad(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{AccountTone(emi.AccountActive), "ok"}, {AccountTone(emi.AccountBlocked), "warn"},
		{AccountTone(emi.AccountTerminated), "bad"}, {AccountTone("other"), ""},
		{HoldTone(emi.AuthApproved), "warn"}, {HoldTone(emi.AuthCleared), "ok"}, {HoldTone("expired"), "neutral"},
		{AMLTone(emi.AMLClear), "ok"}, {AMLTone(emi.AMLCleared), "ok"}, {AMLTone(emi.AMLMatch), "warn"},
		{AMLTone(emi.AMLConfirmed), "bad"}, {AMLTone("other"), ""},
		{KYCTone(emi.KYCApproved), "ok"}, {KYCTone(emi.KYCRejected), "bad"}, {KYCTone(emi.KYCExpired), "bad"},
		{KYCTone(emi.KYCSubmitted), "warn"}, {KYCTone(emi.KYCPending), "warn"}, {KYCTone("other"), ""},
		{TransferTone(emi.TransferCompleted), "ok"}, {TransferTone(emi.TransferPending), "warn"},
		{TransferTone(emi.TransferReturned), "bad"}, {TransferTone("other"), ""},
		{AppTone(emi.AppApproved), "ok"}, {AppTone(emi.AppRejected), "bad"}, {AppTone(emi.AppInReview), "warn"},
		{AppTone(emi.AppInfoRequested), "warn"}, {AppTone(emi.AppChecking), ""},
		{CheckTone(emi.CheckPassed), "ok"}, {CheckTone(emi.CheckFailed), "bad"}, {CheckTone(emi.CheckError), "bad"},
		{CheckTone(emi.CheckReview), "warn"}, {CheckTone("pending"), ""},
		{MemberTone("active"), "ok"}, {MemberTone("inactive"), ""},
		{CardTone(emi.CardActive), "ok"}, {CardTone(emi.CardInactive), "warn"}, {CardTone(emi.CardTerminated), "bad"},
		{CardTone("other"), ""},
		{WalletTone(emi.WalletActive), "ok"}, {WalletTone(emi.WalletSuspended), "warn"},
		{WalletTone(emi.WalletDeleted), "bad"}, {WalletTone("other"), "bad"},
		{DeliveryTone(emi.DeliverySucceeded), "ok"}, {DeliveryTone(emi.DeliveryFailed), "bad"},
		{DeliveryTone(emi.DeliveryCanceled), "bad"}, {DeliveryTone(emi.DeliveryPending), "warn"}, {DeliveryTone("other"), "warn"},
		{RiskTone("Low"), "ok"}, {RiskTone("Medium"), "warn"}, {RiskTone("High"), "bad"}, {RiskTone(""), ""},
		{AdjustmentTone(emi.AdjustmentApproved), "ok"}, {AdjustmentTone(emi.AdjustmentRejected), "bad"},
		{AdjustmentTone(emi.AdjustmentPending), ""},
		{SMSTone("sent"), "ok"}, {SMSTone("failed"), "bad"}, {SMSTone("queued"), ""},
		{outcomeTone(emi.OutcomeSuccess), "ok"}, {outcomeTone(emi.OutcomeDenied), "bad"}, {outcomeTone(emi.OutcomeFailure), "bad"},
		{outcomeTone("other"), ""},
	} {
		if c.got != c.want {
			t.Errorf("tone %q, want %q", c.got, c.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("an unknown kind of thing got a tone instead of failing loudly")
		}
	}()
	tone("no such kind", "active")
}
