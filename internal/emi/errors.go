package emi

import (
	"errors"
	"fmt"
)

// Kind classifies an error for every surface: each surface maps a Kind to its
// own status (HTTP status for the API and the portal) in exactly one place.
type Kind uint8

// Error kinds. KindInternal is the zero value on purpose: an error nobody
// classified is an internal one.
const (
	KindInternal        Kind = iota // a bug or an outage; never the client's fault
	KindInvalid                     // the request is malformed or breaks a field rule
	KindUnauthenticated             // credentials missing, wrong, expired or replayed
	KindForbidden                   // authenticated, but not allowed
	KindNotFound                    // unknown resource, or one that belongs to someone else
	KindConflict                    // state conflict, duplicate, idempotency conflict
	KindTooLarge                    // request body over the limit
	KindRateLimited                 // too many requests
	KindUnavailable                 // a dependency the operation needs is not ready
)

// String returns the kind's name, for logs.
func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindUnauthenticated:
		return "unauthenticated"
	case KindForbidden:
		return "forbidden"
	case KindNotFound:
		return "not_found"
	case KindConflict:
		return "conflict"
	case KindTooLarge:
		return "too_large"
	case KindRateLimited:
		return "rate_limited"
	case KindUnavailable:
		return "unavailable"
	default:
		return "internal"
	}
}

// FieldError names one field of a request and what is wrong with it. Field is
// the JSON path of the field as the client sent it, e.g. payout_details[0].iban.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// JoinField is the JSON path of member name of the value at path:
// ("company", "legal_name") is company.legal_name, ("members[0]",
// "first_name") is members[0].first_name, and ("", "iban") is iban: a
// path never starts with a dot. name "" names the value at path itself.
// Every path of a FieldError is built with it (or with [i] for an array
// element).
func JoinField(path, name string) string {
	switch {
	case path == "":
		return name
	case name == "":
		return path
	}
	return path + "." + name
}

// Error is the one error type that crosses layers. Code and Key are public
// (they reach clients); Kind decides the status; Fields lists validation
// problems; the wrapped cause and Detail are for logs only and never reach a
// client. Public is a sentence safe to show the person who asked (the
// back office shows it instead of the catalogue message; see WithPublic).
type Error struct {
	Code   int
	Key    string
	Kind   Kind
	Fields []FieldError
	Detail string
	Public string
	cause  error
}

// Error returns the code and key, plus the detail for logs.
func (e *Error) Error() string {
	s := fmt.Sprintf("%d %s", e.Code, e.Key)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is the same catalogue entry (same code and key),
// so errors.Is(err, emi.ErrCardNotFound) works on copies made by With*.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Key == e.Key
}

// WithFields returns a copy of the catalogue error carrying field errors.
func (e *Error) WithFields(fields ...FieldError) *Error {
	c := *e
	c.Fields = append(append([]FieldError(nil), e.Fields...), fields...)
	return &c
}

// Field is shorthand for WithFields with a single field error.
func (e *Error) Field(field, message string) *Error {
	return e.WithFields(FieldError{Field: field, Message: message})
}

// WithDetail returns a copy with a detail for logs (never shown to clients).
func (e *Error) WithDetail(format string, args ...any) *Error {
	c := *e
	c.Detail = fmt.Sprintf(format, args...)
	return &c
}

// WithPublic returns a copy with a public detail: a sentence that explains
// this occurrence of the error and is safe to show the staff user who made
// the request (as GoToSocial's errors carry a safe message beside the
// logged one). The service that knows the reason writes it, so a screen
// need not ask a second service why it failed. It never holds secrets or
// another partner's data; the partner API's error envelope (contract §3)
// does not carry it.
func (e *Error) WithPublic(format string, args ...any) *Error {
	c := *e
	c.Public = fmt.Sprintf(format, args...)
	return &c
}

// Wrap returns a copy of the catalogue error that wraps cause (for logs).
func (e *Error) Wrap(cause error) *Error {
	c := *e
	c.cause = cause
	return &c
}

// Internal wraps an unexpected error as 10000 services.general.error. The
// cause is kept for logs and never shown.
// An overload or an outage of the database (see Transient) is not a bug:
// it becomes ErrUnavailable or ErrOutcomeUnknown instead.
func Internal(cause error) *Error {
	if t := Transient(cause); t != nil {
		return t
	}
	return ErrInternal.Wrap(cause)
}

// AsError returns err as an *Error: the catalogue error it is or wraps, or an
// internal error wrapping it. It returns nil for nil.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Internal(err)
}

func def(code int, key string, kind Kind) *Error {
	return &Error{Code: code, Key: key, Kind: kind}
}

// The error catalogue: every code a client can see lives here once, with its
// message key and kind. Seed codes first, then the codes contract §4 adds.
var (
	// Seed-api.md codes.
	ErrValidation             = def(11001, "services.general.validation", KindInvalid)
	ErrApplicationNotFound    = def(11002, "service.applications.not_found", KindNotFound)
	ErrMemberNotFound         = def(11002, "service.members.not_found", KindNotFound)
	ErrUserNotFound           = def(11002, "service.users.not_found", KindNotFound)
	ErrValidatorConfigMissing = def(11008, "service.applications.validator_not_found", KindConflict)
	ErrDuplicateUser          = def(-2, "service.users.duplicate", KindConflict)
	ErrUserValidation         = def(-3, "service.users.validation", KindInvalid)
	ErrInvalidProcessor       = def(18000, "services.general.invalid_processor", KindUnavailable)
	ErrAMLMatchFound          = def(18001, "service.aml.match.found", KindConflict)

	// Contract §4 codes.
	ErrInternal            = def(10000, "services.general.error", KindInternal)
	ErrAuthInvalid         = def(10001, "services.auth.invalid", KindUnauthenticated)
	ErrAuthExpired         = def(10002, "services.auth.expired", KindUnauthenticated)
	ErrAuthReplayed        = def(10003, "services.auth.replayed", KindUnauthenticated)
	ErrBadRequest          = def(10005, "services.general.bad_request", KindInvalid)
	ErrRouteNotFound       = def(10004, "services.general.route_not_found", KindNotFound)
	ErrMethodNotAllowed    = def(10006, "services.general.method_not_allowed", KindInvalid)
	ErrTooLarge            = def(10013, "services.general.too_large", KindTooLarge)
	ErrRateLimited         = def(10029, "services.general.rate_limited", KindRateLimited)
	ErrIdempotencyConflict = def(10409, "services.general.idempotency_conflict", KindConflict)
	ErrApplicationClosed   = def(11003, "service.applications.closed", KindConflict)
	ErrNonUniqueValue      = def(11004, "services.general.non_unique_value", KindConflict)

	ErrCardValidation        = def(12001, "service.cards.validation", KindInvalid)
	ErrCardNotFound          = def(12002, "service.cards.not_found", KindNotFound)
	ErrCardAccountUnusable   = def(12003, "service.cards.account_unusable", KindConflict)
	ErrActiveCardExists      = def(12004, "service.cards.active_card_exists", KindConflict)
	ErrCardInvalidTransition = def(12005, "service.cards.invalid_transition", KindConflict)
	ErrGroupNotInProgram     = def(12006, "service.cards.group_not_in_program", KindConflict)
	ErrDeliveryRequired      = def(12007, "service.cards.delivery_required", KindInvalid)
	ErrCardProgramMismatch   = def(12008, "service.cards.program_mismatch", KindConflict)
	ErrCardAMLRequired       = def(12009, "service.cards.aml_required", KindConflict)
	ErrCardNoMobile          = def(12010, "service.cards.no_mobile", KindConflict)
	// ErrSMSUnavailable: the SMS gateway did not take the message (added).
	ErrSMSUnavailable = def(12011, "service.cards.sms_unavailable", KindUnavailable)
	// ErrPINSMSHold: no PIN text for 24 hours after a staff member changed
	// the card's 3DS or delivery number (an agent could re-point the number
	// to their own phone; the pause lets the cardholder notice first).
	ErrPINSMSHold = def(12012, "service.cards.pin_sms_hold", KindConflict)

	ErrAccountValidation        = def(13001, "service.accounts.validation", KindInvalid)
	ErrAccountNotFound          = def(13002, "service.accounts.not_found", KindNotFound)
	ErrProgramNotFound          = def(13003, "service.accounts.program_not_found", KindNotFound)
	ErrOwnerNotFound            = def(13004, "service.accounts.owner_not_found", KindNotFound)
	ErrMainAccountInvalid       = def(13005, "service.accounts.main_invalid", KindConflict)
	ErrAccountInvalidTransition = def(13006, "service.accounts.invalid_transition", KindConflict)
	ErrBalanceNotZero           = def(13007, "service.accounts.balance_not_zero", KindConflict)

	// Money movement (added operations: transfers, statements, sandbox).
	ErrTransferValidation        = def(14001, "service.transfers.validation", KindInvalid)
	ErrTransferNotFound          = def(14002, "service.transfers.not_found", KindNotFound)
	ErrInsufficientFunds         = def(14003, "service.transfers.insufficient_funds", KindConflict)
	ErrTransferAccountUnusable   = def(14004, "service.transfers.account_unusable", KindConflict)
	ErrCurrencyMismatch          = def(14005, "service.transfers.currency_mismatch", KindConflict)
	ErrDestinationNotFound       = def(14006, "service.transfers.destination_not_found", KindNotFound)
	ErrTransferInvalidTransition = def(14007, "service.transfers.invalid_transition", KindConflict)
	// ErrSameBalance: the two sides of a movement are one balance (a main
	// account and one of its virtual accounts): nothing would move, so
	// nothing is booked (booking it would skip the funds check).
	ErrSameBalance = def(14008, "service.transfers.same_balance", KindConflict)
	// ErrTransferComplianceHold: the source account's holder has a
	// sanctions or watch-list hit waiting for a compliance decision, or
	// confirmed: no money leaves until compliance decides.
	ErrTransferComplianceHold = def(14030, "service.transfers.compliance_hold", KindConflict)
	// ErrTransferDeclined: emi's transaction monitoring declined the
	// transfer before any money moved. The answer gives no reason, as a
	// bank's decline gives none.
	ErrTransferDeclined = def(14031, "service.transfers.declined", KindConflict)
	// ErrAuthorizationNotFound: an unknown card authorization, or one of
	// another partner's card (sandbox card payments).
	ErrAuthorizationNotFound = def(14020, "service.authorizations.not_found", KindNotFound)
	// Information requests: compliance's questions about a customer
	// (information_requests_*): unknown (or another partner's), or
	// answered already.
	ErrInformationRequestNotFound = def(14040, "service.information_requests.not_found", KindNotFound)
	ErrInformationRequestAnswered = def(14041, "service.information_requests.answered", KindConflict)

	// Sandbox outcomes: the partner drives a staff decision, since a
	// sandbox has nobody to make it.
	ErrNotInReview        = def(11005, "service.applications.not_in_review", KindConflict)
	ErrAPIAMLNotFound     = def(18002, "service.aml.not_found", KindNotFound)
	ErrAMLNothingToReview = def(18003, "service.aml.nothing_to_review", KindConflict)
	ErrNoOpenKYCSession   = def(19002, "service.kyc.no_open_session", KindConflict)

	// Webhook endpoints through the partner API.
	ErrAPIWebhookValidation       = def(15001, "service.webhooks.validation", KindInvalid)
	ErrAPIWebhookEndpointNotFound = def(15002, "service.webhooks.endpoint_not_found", KindNotFound)
	ErrAPIWebhookDeliveryNotFound = def(15003, "service.webhooks.delivery_not_found", KindNotFound)
	ErrAPIWebhookEndpointDisabled = def(15004, "service.webhooks.endpoint_disabled", KindConflict)
	// ErrAPIWebhookEndpointLimit and ErrAPIWebhookHostLimit: the partner
	// has as many enabled endpoints as it may have, in all or on the URL's
	// host name (one event is one delivery per endpoint, so endpoints
	// multiply emi's traffic). errors names url with the limit.
	ErrAPIWebhookEndpointLimit = def(15005, "service.webhooks.endpoint_limit", KindConflict)
	ErrAPIWebhookHostLimit     = def(15006, "service.webhooks.host_limit", KindConflict)

	// Test clocks (sandbox only): a request the clock cannot take, no
	// clock, a second clock, an advance while one runs.
	ErrTestClockValidation = def(16001, "service.test_clocks.validation", KindInvalid)
	ErrTestClockNotFound   = def(16002, "service.test_clocks.not_found", KindNotFound)
	ErrTestClockExists     = def(16003, "service.test_clocks.exists", KindConflict)
	ErrTestClockAdvancing  = def(16004, "service.test_clocks.advancing", KindConflict)

	ErrUserHasProducts    = def(-4, "service.users.has_products", KindConflict)
	ErrKYCAlreadyApproved = def(19001, "service.kyc.already_approved", KindConflict)
	ErrPartnerNotFound    = def(10404, "service.partners.not_found", KindNotFound)
	ErrPartnerKeyNotFound = def(10405, "service.partners.key_not_found", KindNotFound)
	ErrPartnerValidation  = def(10406, "service.partners.validation", KindInvalid)
	// ErrRotationInOverlap: a secret rotation while the previous secret is
	// still inside its overlap needs a confirmation (it would cut off the
	// secret the partner most likely still signs with).
	ErrRotationInOverlap = def(10407, "service.partners.rotation_in_overlap", KindConflict)
)

// Catalogue lists every catalogue error, for documentation and for the test
// that keeps openapi.yaml and the portal's message texts in step with it.
func Catalogue() []*Error {
	return []*Error{
		ErrValidation, ErrApplicationNotFound, ErrMemberNotFound, ErrUserNotFound,
		ErrValidatorConfigMissing, ErrDuplicateUser, ErrUserValidation, ErrInvalidProcessor,
		ErrAMLMatchFound, ErrInternal, ErrAuthInvalid, ErrAuthExpired, ErrAuthReplayed,
		ErrBadRequest, ErrRouteNotFound, ErrMethodNotAllowed, ErrTooLarge, ErrRateLimited, ErrIdempotencyConflict, ErrApplicationClosed,
		ErrNonUniqueValue, ErrCardValidation, ErrCardNotFound, ErrCardAccountUnusable,
		ErrActiveCardExists, ErrCardInvalidTransition, ErrGroupNotInProgram, ErrDeliveryRequired,
		ErrCardProgramMismatch, ErrCardAMLRequired, ErrCardNoMobile, ErrSMSUnavailable, ErrPINSMSHold, ErrAccountValidation,
		ErrAccountNotFound, ErrProgramNotFound, ErrOwnerNotFound, ErrMainAccountInvalid,
		ErrAccountInvalidTransition, ErrBalanceNotZero, ErrTransferValidation, ErrTransferNotFound,
		ErrInsufficientFunds, ErrTransferAccountUnusable, ErrCurrencyMismatch, ErrDestinationNotFound,
		ErrTransferInvalidTransition, ErrSameBalance, ErrTransferComplianceHold, ErrTransferDeclined, ErrAuthorizationNotFound,
		ErrInformationRequestNotFound, ErrInformationRequestAnswered, ErrUserHasProducts, ErrKYCAlreadyApproved,
		ErrPartnerNotFound, ErrPartnerKeyNotFound, ErrPartnerValidation, ErrRotationInOverlap,
		ErrNotInReview, ErrAPIAMLNotFound, ErrAMLNothingToReview, ErrNoOpenKYCSession,
		ErrAPIWebhookValidation, ErrAPIWebhookEndpointNotFound, ErrAPIWebhookDeliveryNotFound, ErrAPIWebhookEndpointDisabled,
		ErrAPIWebhookEndpointLimit, ErrAPIWebhookHostLimit,
		ErrTestClockValidation, ErrTestClockNotFound, ErrTestClockExists, ErrTestClockAdvancing,
		ErrUnavailable, ErrOutcomeUnknown,
	}
}

// Back-office errors. They never reach the partner API, so they are listed in
// PortalCatalogue instead of Catalogue (which openapi.yaml documents).
var (
	ErrForbidden       = def(20003, "portal.forbidden", KindForbidden)
	ErrStaffValidation = def(20001, "portal.staff.validation", KindInvalid)
	ErrStaffNotFound   = def(20004, "portal.staff.not_found", KindNotFound)
	ErrDuplicateStaff  = def(20009, "portal.staff.duplicate", KindConflict)
	ErrSignInFailed    = def(20010, "portal.signin.failed", KindUnauthenticated)
	ErrSignInThrottled = def(20011, "portal.signin.throttled", KindRateLimited)
	ErrTOTPInvalid     = def(20012, "portal.totp.invalid", KindUnauthenticated)
	ErrPasswordPolicy  = def(20013, "portal.password.policy", KindInvalid)
	ErrOwnRoles        = def(20014, "portal.staff.own_roles", KindForbidden)
	ErrSessionExpired  = def(20015, "portal.session.expired", KindUnauthenticated)
	// Staff changes that need a second administrator (so no one
	// administrator alone can hand out privileged access).
	ErrStaffChangeNotFound = def(20016, "portal.staff.change_not_found", KindNotFound)
	ErrStaffChangeDecided  = def(20017, "portal.staff.change_decided", KindConflict)
	ErrStaffChangePending  = def(20018, "portal.staff.change_pending", KindConflict)
	ErrStaffChangeStale    = def(20019, "portal.staff.change_stale", KindConflict)

	ErrDocumentNotFound   = def(20020, "portal.documents.not_found", KindNotFound)
	ErrAMLCheckNotFound   = def(20021, "portal.aml.not_found", KindNotFound)
	ErrKYCSessionNotFound = def(20022, "portal.kyc.not_found", KindNotFound)
	ErrReviewValidation   = def(20023, "portal.review.validation", KindInvalid)
	ErrReviewClosed       = def(20024, "portal.review.closed", KindConflict)
	ErrKYCLinkInvalid     = def(20025, "kyc.link.invalid", KindNotFound)
	ErrKYCUploadInvalid   = def(20026, "kyc.upload.invalid", KindInvalid)
	ErrKYCLinkUsed        = def(20027, "kyc.link.used", KindConflict)
	ErrScreeningUpdate    = def(20028, "portal.sanctions.update_failed", KindUnavailable)

	ErrNotAssignee = def(20030, "portal.review.not_assignee", KindConflict)
	ErrReviewStale = def(20031, "portal.review.stale", KindConflict)
	ErrFourEyes    = def(20032, "portal.review.four_eyes", KindConflict)
	// ErrSanctionsBlocked: a sanctions hit of the application is confirmed
	// as a true match, so it cannot be approved.
	ErrSanctionsBlocked = def(20033, "portal.review.sanctions_blocked", KindConflict)
	// ErrRevealQuota: the staff member reached their quota of card-number
	// reveals and full-PAN searches (unlimited, they would let a script
	// recover card numbers).
	ErrRevealQuota = def(20090, "portal.cards.reveal_quota", KindRateLimited)
	// ErrSanctionsUndecided: a sanctions hit of the application waits for
	// its (two-person) decision, so it cannot be approved yet.
	ErrSanctionsUndecided = def(20034, "portal.review.sanctions_undecided", KindConflict)

	// Suspense items and manual adjustments (back office only).
	ErrSuspenseNotFound   = def(20060, "portal.suspense.not_found", KindNotFound)
	ErrSuspenseResolved   = def(20061, "portal.suspense.resolved", KindConflict)
	ErrAdjustmentNotFound = def(20062, "portal.adjustments.not_found", KindNotFound)
	ErrAdjustmentDecided  = def(20063, "portal.adjustments.decided", KindConflict)
	// ErrSuspenseAssignmentPending: the item already has an assignment
	// waiting for a second person, so it is neither requested again nor
	// returned until that request is decided.
	ErrSuspenseAssignmentPending  = def(20064, "portal.suspense.assignment_pending", KindConflict)
	ErrSuspenseAssignmentNotFound = def(20065, "portal.suspense.assignment_not_found", KindNotFound)
	ErrSuspenseAssignmentDecided  = def(20066, "portal.suspense.assignment_decided", KindConflict)
	// A suspension that would leave fewer than two active administrators,
	// and a confirmation or lift of a user who is not suspended.
	ErrLastAdministrators = def(20067, "portal.staff.last_administrators", KindConflict)
	ErrStaffNotSuspended  = def(20068, "portal.staff.not_suspended", KindConflict)
	// The two-person request lifecycle (staff.Controls): a request of the
	// subject already waits, none waits any more, it lapsed, or it is void
	// because what it was bound to changed. A flow may answer with a code of
	// its own (staff.Flow.Codes); the sentence is the lifecycle's.
	ErrRequestPending = def(20070, "portal.requests.pending", KindConflict)
	ErrRequestClosed  = def(20071, "portal.requests.closed", KindConflict)
	ErrRequestLapsed  = def(20072, "portal.requests.lapsed", KindConflict)
	ErrRequestVoid    = def(20073, "portal.requests.void", KindConflict)

	// Transaction monitoring (service/monitoring).
	ErrMonitoringAlertNotFound = def(20080, "portal.monitoring.alert_not_found", KindNotFound)
	ErrCaseNotFound            = def(20081, "portal.monitoring.case_not_found", KindNotFound)
	// ErrCaseConflict: the case (or its alerts, hold, report) is not in a
	// state that allows the step; the sentence says why.
	ErrCaseConflict = def(20082, "portal.monitoring.case_conflict", KindConflict)
)

// PortalCatalogue lists the back-office errors, for the portal's messages.
func PortalCatalogue() []*Error {
	return []*Error{ErrForbidden, ErrStaffValidation, ErrStaffNotFound, ErrDuplicateStaff, ErrSignInFailed,
		ErrSignInThrottled, ErrTOTPInvalid, ErrPasswordPolicy, ErrOwnRoles, ErrSessionExpired,
		ErrStaffChangeNotFound, ErrStaffChangeDecided, ErrStaffChangePending, ErrStaffChangeStale,
		ErrDocumentNotFound, ErrAMLCheckNotFound, ErrKYCSessionNotFound, ErrReviewValidation, ErrReviewClosed,
		ErrKYCLinkInvalid, ErrKYCUploadInvalid, ErrKYCLinkUsed, ErrScreeningUpdate,
		ErrNotAssignee, ErrReviewStale, ErrFourEyes, ErrSanctionsBlocked, ErrSanctionsUndecided, ErrProgramValidation, ErrProgramStale,
		ErrSuspenseNotFound, ErrSuspenseResolved, ErrAdjustmentNotFound, ErrAdjustmentDecided,
		ErrSuspenseAssignmentPending, ErrSuspenseAssignmentNotFound, ErrSuspenseAssignmentDecided, ErrRevealQuota,
		ErrLastAdministrators, ErrStaffNotSuspended, ErrRequestPending, ErrRequestClosed, ErrRequestLapsed, ErrRequestVoid,
		ErrMonitoringAlertNotFound, ErrCaseNotFound, ErrCaseConflict}
}
