package portal

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
	emi.ErrPartnerNotFound.Key:         "There is no such partner.",
	emi.ErrPartnerKeyNotFound.Key:      "There is no such API key, or it is revoked.",
	emi.ErrPartnerValidation.Key:       "Please correct the marked fields.",
	emi.ErrNonUniqueValue.Key:          "This value is already in use.",
	emi.ErrInternal.Key:                "Something went wrong on our side. The error was logged.",
	emi.ErrWebhookValidation.Key:       "Please correct the marked fields.",
	emi.ErrWebhookEndpointNotFound.Key: "There is no such webhook endpoint.",
	emi.ErrWebhookDeliveryNotFound.Key: "There is no such delivery.",
	emi.ErrWebhookEndpointDisabled.Key: "The endpoint is disabled: enable it before replaying a delivery.",
	emi.ErrRateLimited.Key:             "Too many requests. Try again shortly.",
}

// Message returns the text for an error's key (a generic text for keys
// without one, never the internal detail).
func Message(e *emi.Error) string {
	if m, ok := messages[e.Key]; ok {
		return m
	}
	if e.Kind == emi.KindInternal {
		return messages[emi.ErrInternal.Key]
	}
	return "The request could not be completed (" + e.Key + ")."
}
