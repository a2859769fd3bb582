package portal

import "emi/internal/emi"

// statusTones is the one table of status badge colours: for each kind of
// thing, the tone of each of its statuses (ok, warn, bad, neutral; "" is
// the plain badge) and the tone of any status not listed. Screens ask
// tone(kind, status) instead of each writing its own switch.
//
// Cards, wallets and webhook deliveries still have their own functions
// (cardTone, walletTone in cards.go; deliveryTone, below, shared by the
// partners and onboarding screens) while
// those files are being changed elsewhere: fold them in here next.
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

func accountTone(status string) string       { return tone("account", status) }
func holdTone(status string) string          { return tone("hold", status) }
func amlTone(s emi.AMLStatus) string         { return tone("aml", string(s)) }
func kycTone(s emi.KYCStatus) string         { return tone("kyc", string(s)) }
func transferTone(status string) string      { return tone("transfer", status) }
func appTone(s emi.ApplicationStatus) string { return tone("application", string(s)) }
func checkTone(status string) string         { return tone("check", status) }
func memberTone(status string) string        { return tone("member", status) }

func toneOrNeutral(t string) string {
	if t == "" {
		return "neutral"
	}
	return t
}

func deliveryTone(s emi.DeliveryState) string {
	switch s {
	case emi.DeliverySucceeded:
		return "ok"
	case emi.DeliveryFailed, emi.DeliveryCanceled:
		return "bad"
	}
	return "warn"
}
