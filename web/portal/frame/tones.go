package frame

import "emi/internal/emi"

// statusTones is the one table of status badge colours: for each kind of
// thing, the tone of each of its statuses (ok, warn, bad, neutral; "" is
// the plain badge) and the tone of any status not listed. Screens ask
// tone(kind, status) instead of each writing its own switch.
//
// Every status badge is here, cards, wallets, webhook deliveries, risk
// scores, adjustments, texts and audit outcomes included. Two tone
// helpers stay outside because they colour no status: declaredTone (a
// yes/no declaration) and countTone (a count, ok at zero), both in
// onboarding.go.
var statusTones = map[string]struct {
	of    map[string]string
	other string
}{
	"account": {map[string]string{emi.AccountActive: "ok", emi.AccountBlocked: "warn", emi.AccountTerminated: "bad"}, ""},
	"hold":    {map[string]string{emi.AuthApproved: "warn", emi.AuthCleared: "ok"}, "neutral"},
	"aml": {map[string]string{string(emi.AMLClear): "ok", string(emi.AMLCleared): "ok", string(emi.AMLMatch): "warn",
		string(emi.AMLConfirmed): "bad"}, ""},
	"kyc": {map[string]string{string(emi.KYCApproved): "ok", string(emi.KYCRejected): "bad", string(emi.KYCExpired): "bad",
		string(emi.KYCSubmitted): "warn", string(emi.KYCPending): "warn"}, ""},
	"transfer": {map[string]string{emi.TransferCompleted: "ok", emi.TransferPending: "warn", emi.TransferReturned: "bad"}, ""},
	"application": {map[string]string{string(emi.AppApproved): "ok", string(emi.AppRejected): "bad",
		string(emi.AppInReview): "warn", string(emi.AppInfoRequested): "warn"}, ""},
	"check":  {map[string]string{emi.CheckPassed: "ok", emi.CheckFailed: "bad", emi.CheckError: "bad", emi.CheckReview: "warn"}, ""},
	"member": {map[string]string{"active": "ok"}, ""},
	"card":   {map[string]string{emi.CardActive: "ok", emi.CardInactive: "warn", emi.CardTerminated: "bad"}, ""},
	// A wallet in a status the screens do not know is shown as bad, as
	// the cards screen always did (deleted is the only other one).
	"wallet": {map[string]string{emi.WalletActive: "ok", emi.WalletSuspended: "warn"}, "bad"},
	"delivery": {map[string]string{string(emi.DeliverySucceeded): "ok", string(emi.DeliveryFailed): "bad",
		string(emi.DeliveryCanceled): "bad"}, "warn"},
	"risk":       {map[string]string{"Low": "ok", "Medium": "warn", "High": "bad"}, ""},
	"adjustment": {map[string]string{emi.AdjustmentApproved: "ok", emi.AdjustmentRejected: "bad"}, ""},
	"sms":        {map[string]string{"sent": "ok", "failed": "bad"}, ""},
	"outcome": {map[string]string{string(emi.OutcomeSuccess): "ok", string(emi.OutcomeDenied): "bad",
		string(emi.OutcomeFailure): "bad"}, ""},
}

// tone returns the badge tone of status for a kind of thing in
// statusTones; a kind not in the table is a programming error.
func tone(kind, status string) string {
	t, ok := statusTones[kind]
	if !ok {
		panic("portal: no badge tones for " + kind)
	}
	if c, ok := t.of[status]; ok {
		return c
	}
	return t.other
}

func AccountTone(status string) string        { return tone("account", status) }
func HoldTone(status string) string           { return tone("hold", status) }
func AMLTone(s emi.AMLStatus) string          { return tone("aml", string(s)) }
func KYCTone(s emi.KYCStatus) string          { return tone("kyc", string(s)) }
func TransferTone(status string) string       { return tone("transfer", status) }
func AppTone(s emi.ApplicationStatus) string  { return tone("application", string(s)) }
func CheckTone(status string) string          { return tone("check", status) }
func MemberTone(status string) string         { return tone("member", status) }
func CardTone(status string) string           { return tone("card", status) }
func WalletTone(status string) string         { return tone("wallet", status) }
func DeliveryTone(s emi.DeliveryState) string { return tone("delivery", string(s)) }
func RiskTone(score string) string            { return tone("risk", score) }
func AdjustmentTone(status string) string     { return tone("adjustment", status) }
func SMSTone(status string) string            { return tone("sms", status) }
func outcomeTone(o emi.Outcome) string        { return tone("outcome", string(o)) }

func ToneOrNeutral(t string) string {
	if t == "" {
		return "neutral"
	}
	return t
}
