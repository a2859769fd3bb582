// Package portal is the back office: it composes the frame and one package
// of screens per business area, and mounts them at /backoffice. Rules live
// in the services (internal/service/...); the screens ask them what a
// person may do and render the answer.
//
// # Layout
//
// The packages follow the service layer's areas:
//
//   - frame: what every screen shares: the session and sign-in stages, who
//     is signed in and the route guards (Guard, CanDo, over the services'
//     operations), the page frame and its navigation, flashes, the one way
//     a service error is answered (RenderError, FlashError), paging and
//     sorting, tones, formatting, names and links;
//   - staffui: sign-in with two factors, the member's own page, staff users
//     and roles, the inbox;
//   - partnersui: partners and keys, webhooks and the events log, the
//     request validator;
//   - peopleui: people and documents, AML and KYC reviews, the hosted KYC
//     page, sanctions lists, the watch list;
//   - onboardingui: applications, companies and members, the review queue,
//     an application's review, the review dashboard;
//   - accountsui: accounts, their statement and money section, programs;
//   - transfersui: a transfer's page, suspense, adjustments;
//   - cardsui: cards and their payments, the SMS outbox;
//   - opsui, across the areas: the dashboard, search, the alert queue, the
//     audit log, jobs.
//
// Each area package has one Pages type holding the frame and the services
// it reads, a Routes method mapping its screens, and its navigation links
// (Nav). This package wires them (portal.go) and orders the routes
// (routes.go) and the navigation. Which package may import which is
// portalArrows in internal/archtest, checked against the real imports, as
// the service areas' arrows are; the same test bounds every back-office
// type to 60 methods and 10 dependencies.
package portal
