package portal

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
		{accountTone(emi.AccountActive), "ok"}, {accountTone(emi.AccountBlocked), "warn"},
		{accountTone(emi.AccountTerminated), "bad"}, {accountTone("other"), ""},
		{holdTone(emi.AuthApproved), "warn"}, {holdTone(emi.AuthCleared), "ok"}, {holdTone("expired"), "neutral"},
		{amlTone(emi.AMLClear), "ok"}, {amlTone(emi.AMLCleared), "ok"}, {amlTone(emi.AMLMatch), "warn"},
		{amlTone(emi.AMLConfirmed), "bad"}, {amlTone("other"), ""},
		{kycTone(emi.KYCApproved), "ok"}, {kycTone(emi.KYCRejected), "bad"}, {kycTone(emi.KYCExpired), "bad"},
		{kycTone(emi.KYCSubmitted), "warn"}, {kycTone(emi.KYCPending), "warn"}, {kycTone("other"), ""},
		{transferTone(emi.TransferCompleted), "ok"}, {transferTone(emi.TransferPending), "warn"},
		{transferTone(emi.TransferReturned), "bad"}, {transferTone("other"), ""},
		{appTone(emi.AppApproved), "ok"}, {appTone(emi.AppRejected), "bad"}, {appTone(emi.AppInReview), "warn"},
		{appTone(emi.AppInfoRequested), "warn"}, {appTone(emi.AppChecking), ""},
		{checkTone(emi.CheckPassed), "ok"}, {checkTone(emi.CheckFailed), "bad"}, {checkTone(emi.CheckError), "bad"},
		{checkTone(emi.CheckReview), "warn"}, {checkTone("pending"), ""},
		{memberTone("active"), "ok"}, {memberTone("inactive"), ""},
		{cardTone(emi.CardActive), "ok"}, {cardTone(emi.CardInactive), "warn"}, {cardTone(emi.CardTerminated), "bad"},
		{cardTone("other"), ""},
		{walletTone(emi.WalletActive), "ok"}, {walletTone(emi.WalletSuspended), "warn"},
		{walletTone(emi.WalletDeleted), "bad"}, {walletTone("other"), "bad"},
		{deliveryTone(emi.DeliverySucceeded), "ok"}, {deliveryTone(emi.DeliveryFailed), "bad"},
		{deliveryTone(emi.DeliveryCanceled), "bad"}, {deliveryTone(emi.DeliveryPending), "warn"}, {deliveryTone("other"), "warn"},
		{riskTone("Low"), "ok"}, {riskTone("Medium"), "warn"}, {riskTone("High"), "bad"}, {riskTone(""), ""},
		{adjustmentTone(emi.AdjustmentApproved), "ok"}, {adjustmentTone(emi.AdjustmentRejected), "bad"},
		{adjustmentTone(emi.AdjustmentPending), ""},
		{smsTone("sent"), "ok"}, {smsTone("failed"), "bad"}, {smsTone("queued"), ""},
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
