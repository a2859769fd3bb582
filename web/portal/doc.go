// Package portal is the back office: staff sign-in with two factors, scs
// sessions, cross-origin protection, security headers, and the screens. It
// renders templ components from views/ and calls the same services as the
// partner API; rules live there, never here.
//
// # Layout
//
// The screens follow the service layer's business areas
// (internal/service/...): each screen file is named after its area,
// <area>.go or <area>_<screen>.go:
//
//   - staff: staff users and roles (staff.go), sign-in with two factors
//     (staff_auth.go), the user's own page (staff_account.go), the inbox
//     (staff_inbox.go);
//   - partners: partners and keys (partners.go), webhooks and the events
//     log (partners_webhooks.go), the request validator
//     (partners_validator.go);
//   - people: users and documents (people.go), AML reviews (people_aml.go,
//     people_aml_merchants.go), KYC reviews (people_kyc.go) and the hosted
//     KYC page (people_kyc_hosted.go), sanctions lists
//     (people_sanctions.go), the watch list (people_watchlist.go);
//   - onboarding: applications (onboarding.go), companies and members
//     (onboarding_companies.go), the review queue (onboarding_review.go),
//     an application's review (onboarding_review_app.go), the review
//     dashboard (onboarding_metrics.go);
//   - accounts: accounts (accounts.go), their statement
//     (accounts_statement.go) and money section (accounts_money.go),
//     programs (accounts_programs.go);
//   - transfers: a transfer's page (transfers.go), suspense and the
//     incoming payment simulator (transfers_incoming.go), adjustments
//     (transfers_adjustments.go);
//   - cards: cards (cards.go), their payments (cards_authorizations.go);
//   - ops, across the areas: the dashboard (ops_dashboard.go), search
//     (ops_search.go), the audit log (ops_audit.go), the alert queue
//     (ops_alerts.go), jobs (ops_jobs.go).
//
// The frame and the shared helpers belong to no area: portal.go (the
// Portal type, Deps, New, the handler), routes.go (every route), render.go
// (the page frame: layout, flashes, error pages, the hosted pages' frame),
// nav.go (the navigation and its badges), access.go (the session and
// permission middleware, the signed-in user), and one named home per kind
// of shared helper: errors.go, messages.go, request.go, sorting.go,
// tones.go, format.go, names.go, links.go, history.go.
//
// The rule, which layout_test.go enforces: the frame and the shared files
// use no screen file (only routes.go, where every area's handlers are
// registered, names them); a screen file uses the screen files of its own
// area and of the areas portalArrows (in layout_test.go) allows, such as
// a person's page listing their accounts and cards; a helper two areas
// need moves to a shared file, and a helper one area needs stays in that
// area's files.
package portal
