package api_test

import (
	"errors"
	"net/http"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/ops"
)

// auditedAsSandbox counts the audit rows of action on token written by the
// sandbox's reviewers (system principals).
func auditedAsSandbox(t *testing.T, env *apptest.Env, action, token string) int {
	t.Helper()
	var n int
	if err := env.App.DB.Get(&n, `SELECT count(*) FROM audit_log WHERE action = $1 AND resource_token = $2 AND actor_id IN ($3, $4)`,
		action, token, kernel.SandboxReviewerID, kernel.SandboxSecondReviewerID); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSandboxOutcomes: a partner drives the human outcomes of KYC, AML and
// applications through the staff decision methods; each sends the event a
// real decision sends, is audited as the sandbox's reviewer, and the
// operations do not exist in production.
func TestSandboxOutcomes(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Sandbox outcomes", Processing: emi.ProcessingSemiAutomatic})

	t.Run("KYC approved and rejected", func(t *testing.T) {
		for _, c := range []struct{ outcome, reason string }{{"approved", ""}, {"rejected", "The document photo is unreadable."}} {
			u := createUser(t, env, p, validUser(p))
			apptest.Expect(t, "no session yet", call(t, env, p, http.MethodPost, "/v1/sandbox/kyc/"+u, "sandbox_kyc_decide",
				map[string]any{"outcome": c.outcome}), emi.ErrNoOpenKYCSession.Code, http.StatusConflict)
			apptest.Expect(t, "kyc_init", call(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": u}), 0, http.StatusCreated)
			body := map[string]any{"outcome": c.outcome}
			if c.reason != "" {
				body["reason"] = c.reason
			}
			r := call(t, env, p, http.MethodPost, "/v1/sandbox/kyc/"+u, "sandbox_kyc_decide", body)
			apptest.Expect(t, "sandbox_kyc_decide "+c.outcome, r, 0, http.StatusOK)
			if r.Data["status"] != c.outcome || c.reason != "" && r.Data["reason"] != c.reason {
				t.Fatalf("%s: %s", c.outcome, r)
			}
			if d := call(t, env, p, http.MethodGet, "/v2/users/"+u, "user_details", nil); d.Data["kyc_status"] != c.outcome {
				t.Fatalf("user after %s: %s", c.outcome, d)
			}
			ev := waitEvent(t, env, emi.EventUserKYCUpdated, u)
			if ev["kyc_status"] != c.outcome {
				t.Fatalf("user.kyc_updated: %v", ev)
			}
			if auditedAsSandbox(t, env, "kyc.review", r.Data["session"].(string)) != 1 {
				t.Fatalf("the decision is not audited as the sandbox's reviewer")
			}
		}
	})

	t.Run("AML check cleared and confirmed", func(t *testing.T) {
		// Each outcome twice, cleared first: a sandbox review answers its
		// check only and is never remembered as a false positive, so the
		// documented listed name answers a match on every call whatever a
		// test run decided before (a partner's CI runs daily).
		for _, outcome := range []string{"cleared", "confirmed", "cleared", "confirmed"} {
			hit := call(t, env, p, http.MethodPost, "/v1/aml", "aml_check", kimBody())
			apptest.Expect(t, "aml_check", hit, emi.ErrAMLMatchFound.Code, http.StatusConflict)
			token := hit.Data["token"].(string)
			r := call(t, env, p, http.MethodPost, "/v1/sandbox/aml/"+token, "sandbox_aml_review", map[string]any{"outcome": outcome})
			apptest.Expect(t, "sandbox_aml_review "+outcome, r, 0, http.StatusOK)
			if r.Data["status"] != outcome {
				t.Fatalf("%s: %s", outcome, r)
			}
			waitEvent(t, env, emi.EventAMLCheckReviewed, token)
			if auditedAsSandbox(t, env, "aml_check.hit_decided", token)+auditedAsSandbox(t, env, "aml_check.hit_false_positive_proposed", token) == 0 {
				t.Fatalf("the hits are not audited as the sandbox's reviewer")
			}
			apptest.Expect(t, "reviewed twice", call(t, env, p, http.MethodPost, "/v1/sandbox/aml/"+token, "sandbox_aml_review",
				map[string]any{"outcome": outcome}), emi.ErrAMLNothingToReview.Code, http.StatusConflict)
		}
		clear := call(t, env, p, http.MethodPost, "/v1/aml", "aml_check", amlBody()).Data["token"].(string)
		apptest.Expect(t, "a clear check", call(t, env, p, http.MethodPost, "/v1/sandbox/aml/"+clear, "sandbox_aml_review",
			map[string]any{"outcome": "cleared"}), emi.ErrAMLNothingToReview.Code, http.StatusConflict)
	})

	t.Run("application approved, rejected, information requested", func(t *testing.T) {
		for _, c := range []struct {
			outcome string
			event   emi.EventType
			body    map[string]any
		}{
			{"approved", emi.EventApplicationApproved, map[string]any{"outcome": "approved"}},
			{"rejected", emi.EventApplicationRejected, map[string]any{"outcome": "rejected", "reason_code": "high_risk_jurisdiction", "text": "Not a market we serve."}},
			{"information_requested", emi.EventApplicationInfoRequested, map[string]any{"outcome": "information_requested", "text": "Please send the latest excerpt."}},
		} {
			app := createApplication(t, env, p, sandboxApplication(p))
			waitEvent(t, env, emi.EventApplicationInReview, app)
			r := call(t, env, p, http.MethodPost, "/v3/sandbox/applications/"+app+"/decision", "sandbox_application_decide", c.body)
			apptest.Expect(t, "sandbox_application_decide "+c.outcome, r, 0, http.StatusOK)
			if r.Data["status"] != c.outcome {
				t.Fatalf("%s: %s", c.outcome, r)
			}
			waitEvent(t, env, c.event, app)
			apptest.Expect(t, "decided twice", call(t, env, p, http.MethodPost, "/v3/sandbox/applications/"+app+"/decision",
				"sandbox_application_decide", c.body), emi.ErrNotInReview.Code, http.StatusConflict)
		}
		apptest.Expect(t, "bad outcome", call(t, env, p, http.MethodPost, "/v3/sandbox/applications/"+kernel.NewToken()+"/decision",
			"sandbox_application_decide", map[string]any{"outcome": "maybe"}), emi.ErrValidation.Code, http.StatusBadRequest)
	})

	t.Run("another partner's resources are unknown", func(t *testing.T) {
		q := env.NewPartner(t, emi.PartnerCreate{Name: "Other"})
		hit := call(t, env, p, http.MethodPost, "/v1/aml", "aml_check", kimBody()).Data["token"].(string)
		apptest.Expect(t, "foreign AML check", call(t, env, q, http.MethodPost, "/v1/sandbox/aml/"+hit, "sandbox_aml_review",
			map[string]any{"outcome": "cleared"}), emi.ErrAPIAMLNotFound.Code, http.StatusNotFound)
	})

	t.Run("production answers 404 like an unknown route", func(t *testing.T) {
		prod := apptest.New(t, apptest.Options{NoSanctions: true, Configure: func(c *config.Config) { c.Mode = config.ModeProduction }})
		q := prod.NewPartner(t, emi.PartnerCreate{Name: "Prod"})
		for _, rq := range []struct{ path, op string }{{"/v1/sandbox/kyc/" + kernel.NewToken(), "sandbox_kyc_decide"},
			{"/v1/sandbox/aml/" + kernel.NewToken(), "sandbox_aml_review"},
			{"/v3/sandbox/applications/" + kernel.NewToken() + "/decision", "sandbox_application_decide"}} {
			apptest.Expect(t, rq.op+" in production", call(t, prod, q, http.MethodPost, rq.path, rq.op, map[string]any{"outcome": "approved"}),
				emi.ErrRouteNotFound.Code, http.StatusNotFound)
		}
		// The second wall: a production instance has no sandbox decider
		// at all, and none can be built outside a sandbox, so no code
		// path can reach the sandbox reviewers (who satisfy every
		// two-person rule between them) whatever routes are mounted.
		if prod.App.SandboxOutcomes != nil {
			t.Fatal("a production instance holds the sandbox outcomes")
		}
		if so, err := ops.NewSandboxOutcomes(ops.SandboxOutcomesDeps{KYC: prod.App.KYC, AML: prod.App.AML,
			Review: prod.App.Review}); so != nil || !errors.Is(err, ops.ErrNotSandbox) {
			t.Fatalf("sandbox outcomes built outside a sandbox: %v, %v", so, err)
		}
	})
}
