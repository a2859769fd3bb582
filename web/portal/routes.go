package portal

import (
	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/service/onboarding"
	"emi/internal/service/ops"
	"emi/internal/service/partners"
	"emi/internal/service/people"
	"emi/internal/service/staff"
	"emi/internal/service/transfers"
)

// Routes maps the whole back office, one line per screen or action. Every
// state change is a POST (cross-origin protected in Handler); GETs never
// change anything.
func (p *Portal) Routes(r chi.Router) {
	r.Get("/signin", p.signInPage)
	r.Post("/signin", p.signIn)
	r.Get("/signin/password", p.newPasswordPage)
	r.Post("/signin/password", p.newPassword)
	r.Get("/signin/totp", p.totpPage)
	r.Post("/signin/totp", p.totp)
	r.Post("/signin/recovery", p.recovery)
	r.Get("/signin/enroll", p.enrollPage)
	r.Post("/signin/enroll", p.enroll)
	r.Post("/signout", p.signOut)

	r.Group(func(r chi.Router) {
		r.Use(p.requireStaff)
		r.Use(p.lagTolerance)
		r.Get("/", p.dashboard)
		r.Get("/search", p.search)
		r.With(p.ReadForm).Post("/search", p.search) // the header's form: what is typed stays out of URLs

		r.Get("/account", p.account)
		r.Post("/account/password", p.changePassword)
		r.Post("/account/recovery-codes", p.regenerateCodes)
		r.Post("/account/signout-everywhere", p.signOutEverywhere)

		r.With(p.Guard(staff.ViewStaff)).Get("/staff", p.staffList)
		r.With(p.Guard(staff.ManageStaff)).Get("/staff/new", p.staffNew)
		r.With(p.Guard(staff.ManageStaff)).Post("/staff", p.staffCreate)
		r.With(p.Guard(staff.ViewStaff)).Get("/staff/{id}", p.staffDetail)
		r.With(p.Guard(staff.ManageStaff)).Post("/staff/{id}/roles", p.staffRoles)
		r.With(p.Guard(staff.ManageStaff)).Post("/staff/{id}/disable", p.staffDisable)
		r.With(p.Guard(staff.ManageStaff)).Post("/staff/{id}/enable", p.staffEnable)
		r.With(p.Guard(staff.ManageStaff)).Post("/staff/{id}/suspend", p.staffSuspend)
		r.With(p.Guard(staff.ApproveOp(staff.ControlStaffSuspension))).Post("/staff/{id}/suspension/confirm", p.staffSuspensionConfirm)
		r.With(p.Guard(staff.ManageStaff)).Post("/staff/{id}/suspension/lift", p.staffSuspensionLift)
		r.With(p.Guard(staff.ManageStaff)).Post("/staff/{id}/reset", p.staffReset)
		r.With(p.Guard(staff.ManageStaff)).Post("/staff/{id}/revoke-sessions", p.staffRevoke)
		r.With(p.Guard(staff.ApproveOp(staff.ControlStaffPrivileged))).Post("/staff/changes/{change}/approve", p.staffChangeApprove)
		r.With(p.Guard(staff.ManageStaff)).Post("/staff/changes/{change}/reject", p.staffChangeReject)

		r.With(p.Guard(partners.View)).Get("/partners", p.partnerList)
		r.With(p.Guard(partners.Manage)).Get("/partners/new", p.partnerNew)
		r.With(p.Guard(partners.Manage)).Post("/partners", p.partnerCreate)
		r.With(p.Guard(partners.View)).Get("/partners/{id}", p.partnerDetail)
		r.With(p.Guard(partners.Manage)).Post("/partners/{id}/processing", p.partnerProcessing)
		r.With(p.Guard(partners.Manage)).Post("/partners/{id}/keys", p.partnerKeyCreate)
		r.With(p.Guard(partners.Manage)).Post("/partners/{id}/keys/{key}/rotate", p.partnerKeyRotate)
		r.With(p.Guard(partners.Manage)).Post("/partners/{id}/keys/{key}/revoke", p.partnerKeyRevoke)
		r.With(p.Guard(partners.Manage)).Post("/partners/{id}/keys/{key}/signature-version", p.partnerKeySignatureVersion)

		r.With(p.Guard(partners.ManageWebhooks)).Post("/partners/{id}/webhooks", p.webhookAdd)
		r.With(p.Guard(partners.ManageWebhooks)).Post("/partners/{id}/webhooks/{ep}/test", p.webhookTest)
		r.With(p.Guard(partners.ManageWebhooks)).Post("/partners/{id}/webhooks/{ep}/rotate", p.webhookRotate)
		r.With(p.Guard(partners.ManageWebhooks)).Post("/partners/{id}/webhooks/{ep}/enable", p.webhookEnable)
		r.With(p.Guard(partners.ManageWebhooks)).Post("/partners/{id}/webhooks/{ep}/disable", p.webhookDisable)
		r.With(p.Guard(partners.ViewWebhooks)).Get("/partners/{id}/events", p.eventsLog)
		r.With(p.Guard(partners.ManageWebhooks)).Post("/partners/{id}/deliveries/{delivery}/replay", p.replayDelivery)
		r.With(p.Guard(partners.ManageWebhooks)).Post("/partners/{id}/deliveries/replay-failed", p.replayFailed)

		r.With(p.Guard(people.View)).Get("/users", p.userList)
		r.With(p.Guard(people.View)).Get("/users/{user}", p.userDetail)
		r.With(p.Guard(people.View)).Get("/documents/{doc}", p.document)
		r.With(p.Guard(people.View)).Get("/alerts", p.alertQueue)
		r.With(p.Guard(ops.WorkAlerts)).Post("/alerts/claim", p.alertClaim)
		r.With(p.Guard(ops.ReleaseAlerts)).Post("/alerts/release", p.alertRelease)
		r.With(p.Guard(ops.WorkAlerts)).Post("/alerts/assign", p.alertAssign)
		r.With(p.Guard(staff.ViewDashboard)).Get("/inbox", p.inboxPage)
		r.With(p.Guard(staff.ViewDashboard)).Post("/inbox/read", p.inboxRead)
		r.With(p.Guard(people.View)).Get("/aml", p.amlQueue)
		r.With(p.Guard(people.View)).Get("/aml/{check}", p.amlCheck)
		r.With(p.Guard(staff.ApproveOp(staff.ControlAMLHitFalsePositive))).Post("/aml/{check}/decide", p.amlDecide)
		r.With(p.Guard(people.View)).Get("/kyc", p.kycQueue)
		r.With(p.Guard(people.View)).Get("/kyc/{session}", p.kycSession)
		r.With(p.Guard(staff.ApproveOp(staff.ControlKYCDecision))).Post("/kyc/{session}/decide", p.kycDecide)
		r.With(p.Guard(people.View)).Get("/sanctions", p.sanctions)
		// The same permission the service checks (app.UpdateSanctions).
		r.With(p.Guard(people.UpdateSanctions)).Post("/sanctions/update", p.sanctionsUpdate)

		r.With(p.Guard(onboarding.View)).Get("/applications", p.applicationList)
		r.With(p.Guard(onboarding.View)).Get("/applications/{application}", p.applicationDetail)
		r.With(p.Guard(onboarding.View)).Get("/applications/{application}/members/{member}", p.memberDetail)
		r.With(p.Guard(onboarding.View)).Get("/review", p.reviewQueue)
		r.With(p.Guard(onboarding.View)).Get("/review.csv", p.reviewQueueCSV)
		r.With(p.Guard(onboarding.Decide)).Post("/review/next", p.reviewNext)
		r.With(p.Guard(onboarding.View)).Post("/review/views", p.reviewSaveView)
		r.With(p.Guard(onboarding.View)).Post("/review/views/{view}/delete", p.reviewDeleteView)
		r.With(p.Guard(onboarding.Reassign)).Post("/review/bulk", p.reviewBulk)
		r.With(p.Guard(onboarding.View)).Get("/review/metrics", p.reviewMetrics)
		r.With(p.Guard(onboarding.View)).Get("/review/decisions.csv", p.reviewDecisionsCSV)
		r.With(p.Guard(onboarding.Decide)).Post("/review/{application}/claim", p.reviewClaim)
		r.With(p.Guard(onboarding.Oversee)).Post("/review/{application}/release", p.reviewRelease)
		r.With(p.Guard(onboarding.Oversee)).Post("/review/{application}/assign", p.reviewAssign)
		r.With(p.Guard(staff.ApproveOp(staff.ControlApplicationApproval))).Post("/review/{application}/decide", p.reviewDecide)
		r.With(p.Guard(onboarding.Annotate)).Post("/review/{application}/notes", p.reviewNote)
		r.With(p.Guard(staff.DecideOp(staff.ControlHitFalsePositive))).Post("/review/{application}/hits", p.reviewHit)
		r.With(p.Guard(onboarding.Correct)).Post("/review/{application}/company", p.reviewEditCompany)
		r.With(p.Guard(onboarding.Correct)).Post("/review/{application}/members/{member}", p.reviewEditMember)
		r.With(p.Guard(onboarding.View)).Get("/companies", p.companyList)
		r.With(p.Guard(onboarding.View)).Get("/companies/{application}", p.companyDetail)
		r.With(p.Guard(onboarding.ConfigureValidator)).Post("/partners/{id}/validator-config", p.validatorSave)
		r.With(p.Guard(onboarding.ConfigureValidator)).Post("/partners/{id}/validator-config/remove", p.validatorRemove)
		r.With(p.Guard(people.View)).Get("/watchlist", p.watchlist)
		r.With(p.Guard(people.ReviewAML)).Post("/watchlist", p.watchlistAdd)
		r.With(p.Guard(people.ReviewAML)).Post("/watchlist/{entry}/remove", p.watchlistRemove)

		r.With(p.Guard(accounts.View)).Get("/accounts", p.accountList)
		r.With(p.Guard(accounts.View)).Get("/accounts/{account}", p.accountDetail)
		r.With(p.Guard(accounts.Manage)).Post("/accounts/{account}/block", p.accountBlock)
		r.With(p.Guard(accounts.Manage)).Post("/accounts/{account}/unblock", p.accountUnblock)
		r.With(p.Guard(staff.ProposeOp(staff.ControlAccountTermination))).Post("/accounts/{account}/terminate", p.accountTerminate)
		r.With(p.Guard(staff.ApproveOp(staff.ControlAccountTermination))).Post("/accounts/{account}/terminate/approve", p.accountTerminateApprove)
		r.With(p.Guard(staff.ProposeOp(staff.ControlAccountTermination))).Post("/accounts/{account}/terminate/withdraw", p.accountTerminateWithdraw)
		r.With(p.Guard(accounts.View)).Get("/accounts/{account}/statement.csv", p.accountStatementCSV)
		r.With(p.Guard(accounts.View)).Get("/transfers/{transfer}", p.transferDetail)
		r.With(p.Guard(staff.ProposeOp(staff.ControlTransferReversal))).Post("/transfers/{transfer}/reversal", p.transferReversalRequest)
		r.With(p.Guard(staff.ApproveOp(staff.ControlTransferReversal))).Post("/transfers/{transfer}/reversal/approve", p.transferReversalDecide(true))
		r.With(p.Guard(staff.ProposeOp(staff.ControlTransferReversal))).Post("/transfers/{transfer}/reversal/reject", p.transferReversalDecide(false))
		if p.d.Sandbox {
			// The receiving bank's answer to an outgoing payment, simulated.
			r.With(p.Guard(transfers.SimulateSettlement)).Post("/transfers/{transfer}/complete", p.transferComplete)
			r.With(p.Guard(transfers.SimulateSettlement)).Post("/transfers/{transfer}/return", p.transferReturn)
		}
		r.With(p.Guard(staff.ProposeOp(staff.ControlAdjustment))).Post("/accounts/{account}/adjustments", p.adjustmentRequest)
		r.With(p.Guard(transfers.ManageMoney)).Post("/accounts/{account}/incoming", p.accountSimulate) // sandbox only
		r.With(p.Guard(accounts.View)).Get("/programs", p.programs)
		r.With(p.Guard(accounts.ManagePrograms)).Post("/programs", p.programCreate)
		r.With(p.Guard(accounts.ManagePrograms)).Post("/programs/{program}", p.programUpdate)
		r.With(p.Guard(staff.ApproveOp(staff.ControlProgramRisk))).Post("/programs/{program}/change/approve", p.programChangeApprove)
		r.With(p.Guard(accounts.ManagePrograms)).Post("/programs/{program}/change/reject", p.programChangeReject)

		r.With(p.Guard(accounts.View)).Get("/cards", p.cardList)
		r.With(p.Guard(accounts.View), p.ReadForm).Post("/cards", p.cardList) // the search form: a card number stays out of URLs
		r.With(p.Guard(accounts.View)).Get("/cards/{card}", p.cardDetail)
		r.With(p.cardGuard(emi.CardActivate)).Post("/cards/{card}/activate", p.cardActivate)
		r.With(p.cardGuard(emi.CardUnblock)).Post("/cards/{card}/status", p.cardStatus)
		r.With(p.cardGuard(emi.CardBlock)).Post("/cards/{card}/block", p.cardBlock)
		r.With(p.cardGuard(emi.CardTerminate)).Post("/cards/{card}/terminate", p.cardTerminate)
		r.With(p.cardGuard(emi.CardReplace)).Post("/cards/{card}/replace", p.cardReplace)
		r.With(p.cardGuard(emi.CardConvert)).Post("/cards/{card}/convert", p.cardConvert)
		r.With(p.cardGuard(emi.CardAssign)).Post("/cards/{card}/assign", p.cardAssign)
		r.With(p.cardGuard(emi.CardSetGroups)).Post("/cards/{card}/groups", p.cardGroups)
		r.With(p.cardGuard(emi.CardSet3DS)).Post("/cards/{card}/3ds/enrol", p.card3DSEnrol)
		r.With(p.cardGuard(emi.CardSet3DS)).Post("/cards/{card}/3ds/update", p.card3DSUpdate)
		r.With(p.cardGuard(emi.CardSet3DS)).Post("/cards/{card}/3ds/remove", p.card3DSRemove)
		r.With(p.cardGuard(emi.CardResetPIN)).Post("/cards/{card}/pin/reset", p.cardResetPIN)
		r.With(p.cardGuard(emi.CardSendPIN)).Post("/cards/{card}/pin/send", p.cardSendPIN)
		r.With(p.cardGuard(emi.CardReveal)).Post("/cards/{card}/reveal", p.cardReveal)
		if p.d.Sandbox {
			// The payment simulator: production has no such routes.
			r.With(p.cardGuard(emi.CardPay)).Post("/cards/{card}/authorizations", p.cardSimulate)
			r.With(p.cardGuard(emi.CardPay)).Post("/cards/{card}/authorizations/{authorization}/clear", p.cardAuthorizationClear)
			r.With(p.cardGuard(emi.CardPay)).Post("/cards/{card}/authorizations/{authorization}/reverse", p.cardAuthorizationReverse)
		}
		r.With(p.Guard(accounts.View)).Get("/sms", p.smsOutbox)

		r.With(p.Guard(transfers.ViewMoney)).Get("/suspense", p.suspense)
		r.With(p.Guard(transfers.ManageMoney)).Post("/suspense/simulate", p.suspenseSimulate) // sandbox only
		// Assignment takes two people (service.ControlSuspenseAssign): a
		// request, then another's approval or anyone's rejection.
		r.With(p.Guard(staff.ProposeOp(staff.ControlSuspenseAssign))).Post("/suspense/{item}/assign", p.suspenseAssign)
		r.With(p.Guard(staff.ApproveOp(staff.ControlSuspenseAssign))).Post("/suspense/assignments/{assignment}/approve", p.suspenseAssignmentApprove)
		r.With(p.Guard(staff.ApproveOp(staff.ControlSuspenseAssign))).Post("/suspense/assignments/{assignment}/reject", p.suspenseAssignmentReject)
		r.With(p.Guard(transfers.ManageMoney)).Post("/suspense/{item}/return", p.suspenseReturn)
		r.With(p.Guard(transfers.ViewMoney)).Get("/adjustments", p.adjustments)
		r.With(p.Guard(staff.ApproveOp(staff.ControlAdjustment))).Post("/adjustments/{adjustment}/approve", p.adjustmentApprove)
		r.With(p.Guard(transfers.ManageMoney)).Post("/adjustments/{adjustment}/reject", p.adjustmentReject)

		r.With(p.Guard(kernel.ViewAudit)).Get("/audit", p.audit)
		r.With(p.Guard(kernel.ViewJobs)).Get("/jobs", p.jobs)
	})
}
