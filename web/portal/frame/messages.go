package frame

import "emi/internal/emi"

// messages are the texts people read for each catalogue key: the same keys
// the API returns, so a partner's support ticket and the back office speak
// of the same thing.
var messages = map[string]string{
	emi.ErrForbidden.Key:               "Your roles do not allow this.",
	emi.ErrStaffValidation.Key:         "Please correct the marked fields.",
	emi.ErrStaffNotFound.Key:           "There is no such staff user.",
	emi.ErrDuplicateStaff.Key:          "A staff user with this e-mail already exists.",
	emi.ErrSignInFailed.Key:            "The e-mail or password is not right, or the account cannot sign in.",
	emi.ErrSignInThrottled.Key:         "Too many attempts. Wait 15 minutes before trying again.",
	emi.ErrTOTPInvalid.Key:             "That code is not right, or it was already used. Wait for the next code.",
	emi.ErrPasswordPolicy.Key:          "The password does not meet the policy.",
	emi.ErrOwnRoles.Key:                "Nobody can change their own roles or disable themselves.",
	emi.ErrSessionExpired.Key:          "Your session ended. Please sign in again.",
	emi.ErrStaffChangeNotFound.Key:     "There is no such staff change.",
	emi.ErrStaffChangeDecided.Key:      "This staff change was already approved or rejected: nothing was changed.",
	emi.ErrStaffChangePending.Key:      "A change to this staff user (or a new user with this e-mail) already waits for a second administrator. Approve or reject it first.",
	emi.ErrStaffChangeStale.Key:        "The staff user changed since this was proposed (roles, or the account was removed), or the proposal is older than 7 days: it is closed. Propose it again if it is still needed.",
	emi.ErrRequestPending.Key:          "A request for this already waits for a second person: approve, reject or withdraw it first. Nothing was changed.",
	emi.ErrRequestClosed.Key:           "No request for this waits any more (it was approved, rejected, withdrawn, lapsed or voided meanwhile). Nothing was changed.",
	emi.ErrRequestLapsed.Key:           "The request lapsed: nobody approved it in time. Propose it again if it is still needed. Nothing was changed.",
	emi.ErrRequestVoid.Key:             "The request is void: what it was about changed after it was proposed. Propose it again if it is still needed. Nothing was changed.",
	emi.ErrMonitoringAlertNotFound.Key: "There is no such monitoring alert.",
	emi.ErrCaseNotFound.Key:            "There is no such case, or it has no approved report yet.",
	emi.ErrCaseConflict.Key:            "The case does not allow this now (perhaps a colleague just changed it), so nothing was changed.",
	emi.ErrPartnerNotFound.Key:         "There is no such partner.",
	emi.ErrPartnerKeyNotFound.Key:      "There is no such API key, or it is revoked.",
	emi.ErrPartnerValidation.Key:       "Please correct the marked fields.",
	emi.ErrRotationInOverlap.Key:       "The secret was not rotated: a rotation is still in its overlap (the previous secret stays valid until the time shown). To rotate again, confirm it on the key's row: the current secret then stops working at once.",
	emi.ErrNonUniqueValue.Key:          "This value is already in use.",
	emi.ErrInternal.Key:                "Something went wrong on our side. The error was logged.",
	emi.ErrUnavailable.Key:             "The system is busy or its database is briefly out of reach: nothing was changed. Try again in a moment.",
	emi.ErrOutcomeUnknown.Key:          "The connection to the database was lost while this was being saved, so it may or may not have been saved. Reload the page and check before doing it again.",
	emi.ErrWebhookValidation.Key:       "Please correct the marked fields.",
	emi.ErrWebhookEndpointNotFound.Key: "There is no such webhook endpoint.",
	emi.ErrWebhookDeliveryNotFound.Key: "There is no such delivery.",
	emi.ErrWebhookEndpointDisabled.Key: "The endpoint is disabled: enable it before replaying a delivery.",
	emi.ErrWebhookEndpointLimit.Key:    "The partner has as many enabled webhook endpoints as allowed: disable one it no longer uses first. Nothing was changed.",
	emi.ErrWebhookHostLimit.Key:        "The partner has as many enabled webhook endpoints on this host as allowed: disable one of them first, or use one endpoint with a wider event filter. Nothing was changed.",
	emi.ErrRateLimited.Key:             "Too many requests. Try again shortly.",
	emi.ErrUserNotFound.Key:            "There is no such person.",
	emi.ErrDocumentNotFound.Key:        "There is no such document.",
	emi.ErrAMLCheckNotFound.Key:        "There is no such AML check.",
	emi.ErrKYCSessionNotFound.Key:      "There is no such KYC session.",
	emi.ErrReviewValidation.Key:        "Please correct the marked fields: every decision needs a reason.",
	emi.ErrReviewClosed.Key:            "This was already decided, so nothing was changed. The page shows the decision on record.",
	emi.ErrKYCLinkInvalid.Key:          "This link is not valid or has expired. Ask the service you are signing up with for a new one.",
	emi.ErrKYCUploadInvalid.Key:        "Some of what you sent cannot be used. Please look at the marked fields and send again.",
	emi.ErrKYCLinkUsed.Key:             "Your documents were already sent with this link.",
	emi.ErrApplicationNotFound.Key:     "There is no such application.",
	emi.ErrMemberNotFound.Key:          "There is no such member of this application.",
	emi.ErrValidatorConfigMissing.Key:  "The partner has no validator configuration.",
	emi.ErrScreeningUpdate.Key:         "The sanctions lists could not be updated; the loaded lists stay in use. The attempt and its error are listed below.",
	emi.ErrNotAssignee.Key:             "Only the underwriter who holds this application can decide it. Claim it first (a claim lapses after 30 minutes without activity).",
	emi.ErrReviewStale.Key:             "The application changed since you opened it (a new document or check result). Reload the page and decide on what is there now.",
	emi.ErrFourEyes.Key:                "This needs a second, independent person: not the one who asked or approved first, nor anyone set up (created, reset, given or stripped of a role, disabled or suspended) by the same administrator in the last 30 days.",
	emi.ErrLastAdministrators.Key:      "Not suspended: that would leave fewer than two administrators able to act, and every two-person decision would stop. Nothing was changed.",
	emi.ErrStaffNotSuspended.Key:       "This user has no suspension to confirm or lift (it was lifted, it lapsed, or it is already confirmed). Nothing was changed.",
	emi.ErrSanctionsUndecided.Key:      "A sanctions hit of this application has no final decision yet: a false positive takes a second person from compliance to confirm it. Approve once every hit is decided.",
	emi.ErrSanctionsBlocked.Key:        "A sanctions hit of this application is confirmed as a true match: it cannot be approved. Reject it, or ask compliance to review the hit.",
	emi.ErrApplicationClosed.Key:       "This application is decided, so its data can no longer be changed.",

	// Accounts (the API's codes the account screens show).
	emi.ErrAccountNotFound.Key:          "There is no such account.",
	emi.ErrAccountValidation.Key:        "Please correct the marked fields.",
	emi.ErrProgramNotFound.Key:          "There is no such program.",
	emi.ErrAccountInvalidTransition.Key: "The account is terminated, and termination is final: nothing was changed.",
	emi.ErrBalanceNotZero.Key:           "The account cannot be terminated while a balance is not zero: the money must be paid out first. Nothing was changed.",

	// Cards (the API's codes the card screens show).
	emi.ErrCardValidation.Key:        "Please correct the marked fields.",
	emi.ErrCardNotFound.Key:          "There is no such card.",
	emi.ErrCardAccountUnusable.Key:   "That account cannot hold this card: it must be an active account of the card's partner and owner, not virtual, with exactly one balance. Nothing was changed.",
	emi.ErrActiveCardExists.Key:      "That account already has a card that is not terminated (one card per account). Nothing was changed.",
	emi.ErrCardInvalidTransition.Key: "The card's state does not allow this (it is terminated, already activated, not virtual, or not enrolled). Nothing was changed.",
	emi.ErrGroupNotInProgram.Key:     "A group code is not associated with the card's program, so no group was changed.",
	emi.ErrDeliveryRequired.Key:      "A plastic card needs delivery details: give the address it is sent to.",
	emi.ErrCardProgramMismatch.Key:   "The card's program does not allow this (card type, currency, PIN by SMS or mobile wallets). Nothing was changed.",
	emi.ErrCardAMLRequired.Key:       "The program needs a clear AML check of the cardholder: give the token of a clear or cleared check of this person.",
	emi.ErrCardNoMobile.Key:          "There is no mobile number for this: give one, or add it to the card's delivery details or the person's profile.",
	emi.ErrSMSUnavailable.Key:        "The SMS gateway did not take the message; the attempt is recorded. Try again later.",
	emi.ErrPINSMSHold.Key:            "No PIN text can be sent for 24 hours after a staff member changed the card's 3DS or delivery phone number. Nothing was sent.",
	emi.ErrRevealQuota.Key:           "You reached your quota of card-number reveals and card-number searches for now; the attempt is recorded. Ask a colleague, or try again later.",
	// Card payments (sandbox simulator).
	emi.ErrAuthorizationNotFound.Key: "There is no such card payment.",
	// Programs (administrators).
	emi.ErrProgramValidation.Key: "The program was not saved: please correct the marked fields.",
	emi.ErrProgramStale.Key:      "Someone saved this program after you opened it, so your changes were not saved. The form now shows the saved settings: make your changes again on them.",
}

// Message returns the public detail the service wrote for this occurrence
// (emi.Error.WithPublic), else the text for the error's key (a generic
// text for keys without one), never the internal detail.
func Message(e *emi.Error) string {
	if e.Public != "" {
		return e.Public
	}
	if m, ok := messages[e.Key]; ok {
		return m
	}
	if e.Kind == emi.KindInternal {
		return messages[emi.ErrInternal.Key]
	}
	return "The request could not be completed (" + e.Key + ")."
}

// moneyMessages are the texts of the money codes (suspense, adjustments,
// and the transfer codes every money screen shows: transfer page,
// statements, simulators, card payments). One text per code, here only.
var moneyMessages = map[string]string{
	emi.ErrSuspenseNotFound.Key:           "There is no such suspense item.",
	emi.ErrSuspenseResolved.Key:           "This suspense item was already assigned or returned (perhaps by a colleague just now), so nothing was changed.",
	emi.ErrAdjustmentNotFound.Key:         "There is no such adjustment request.",
	emi.ErrAdjustmentDecided.Key:          "This adjustment was already approved or rejected (perhaps by a colleague just now), so nothing was changed.",
	emi.ErrSuspenseAssignmentPending.Key:  "This item already has an assignment waiting for a second staff member, so nothing was changed: approve or reject that request first.",
	emi.ErrSuspenseAssignmentNotFound.Key: "There is no such assignment request.",
	emi.ErrSuspenseAssignmentDecided.Key:  "This assignment request was already approved, rejected or withdrawn (perhaps by a colleague just now), so nothing was changed.",
	emi.ErrTransferValidation.Key:         "Nothing was changed: please correct the marked fields.",
	emi.ErrTransferNotFound.Key:           "There is no such transfer.",
	emi.ErrInsufficientFunds.Key:          "That is more than the balance's available amount, so nothing was changed.",
	emi.ErrTransferAccountUnusable.Key:    "The account (or its main account) is blocked or terminated, so nothing was changed.",
	emi.ErrCurrencyMismatch.Key:           "The balance is in another currency, so nothing was changed.",
	emi.ErrDestinationNotFound.Key:        "That matches no balance held in emi, so nothing was changed.",
	emi.ErrTransferInvalidTransition.Key:  "The state does not allow this any more (it was settled, returned or decided meanwhile), so nothing was changed.",
}

func init() {
	for k, v := range moneyMessages {
		if _, dup := messages[k]; dup {
			panic("frame: two texts for " + k)
		}
		messages[k] = v
	}
}
