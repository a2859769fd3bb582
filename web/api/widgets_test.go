package api_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/go-chi/chi/v5"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/service/kernel"
	"emi/internal/validate"
	"emi/web/api"
)

// The foundation has no business operation that creates anything yet, so
// these tests mount a small one of their own, "widget_create", behind the
// real middleware chain. It behaves as a real operation does: strict
// decoding, validation in a service-like function, a row written through the
// ambient transaction, an audit row, and catalogue errors.

type widgetItem struct {
	Label string `json:"label" validate:"required,max=20"`
}

type widgetCreate struct {
	Name  string       `json:"name" validate:"required,max=10"`
	Items []widgetItem `json:"items" validate:"omitempty,max=3,dive"`
}

type widgets struct {
	db     *postgres.DB
	audit  *kernel.Auditor
	v      *validate.Validator
	panics atomic.Int32 // panic on the next N calls, before anything commits
	calls  atomic.Int32
}

const widgetsDDL = `CREATE TABLE widgets (
	token text PRIMARY KEY,
	partner_id uuid NOT NULL,
	name text NOT NULL,
	UNIQUE (partner_id, name))`

func (wg *widgets) create(ctx context.Context, in widgetCreate) (string, error) {
	wg.calls.Add(1)
	if err := wg.v.Struct(in, emi.ErrValidation); err != nil {
		return "", err
	}
	p, _ := emi.PrincipalFrom(ctx)
	token := kernel.NewToken()
	err := wg.db.InTx(ctx, func(ctx context.Context) error {
		_, err := wg.db.Ext(ctx).ExecContext(ctx, `INSERT INTO widgets (token, partner_id, name) VALUES ($1, $2, $3)`, token, p.PartnerID, in.Name)
		if err != nil {
			return postgres.Translate(err)
		}
		if wg.panics.Load() > 0 {
			wg.panics.Add(-1)
			panic("widget: injected failure before commit")
		}
		return wg.audit.Record(ctx, emi.AuditEntry{Action: "widget.create", ResourceType: "widget", ResourceToken: token,
			Changes: map[string]any{"name": in.Name}})
	})
	return token, err
}

// newWidgetEnv starts the app with widget_create mounted at POST /v9/widgets.
func newWidgetEnv(t *testing.T, opts apptest.Options) (*apptest.Env, *widgets) {
	t.Helper()
	wg := &widgets{v: validate.New()}
	opts.Routes = func(r chi.Router, a *api.API) {
		a.Handle(r, http.MethodPost, "/v9/widgets", api.Operation{Name: "widget_create", Invalid: emi.ErrValidation, BodyLimit: api.SmallBody},
			func(w http.ResponseWriter, r *http.Request) {
				var in widgetCreate
				if err := api.Decode(r, &in); err != nil {
					api.WriteError(w, r, err)
					return
				}
				token, err := wg.create(r.Context(), in)
				if err != nil {
					api.WriteError(w, r, err)
					return
				}
				api.WriteData(w, r, http.StatusCreated, map[string]string{"token": token, "name": in.Name})
			})
		a.Handle(r, http.MethodGet, "/v9/boom", api.Operation{Name: "boom", Invalid: emi.ErrValidation, BodyLimit: api.SmallBody},
			func(w http.ResponseWriter, r *http.Request) {
				panic("boom: secret detail that must not leak")
			})
	}
	env := apptest.New(t, opts)
	wg.db, wg.audit = env.App.DB, env.App.Audit
	if _, err := env.App.DB.Exec(widgetsDDL); err != nil {
		t.Fatal(err)
	}
	return env, wg
}

func widgetRequest(body any, key string) apptest.Request {
	rq := apptest.Request{Method: http.MethodPost, Path: "/v9/widgets", Operation: "widget_create", JSON: body, SkipOpenAPI: true}
	if key != "" {
		rq.Header = map[string]string{"Idempotency-Key": key}
	}
	return rq
}

func countWidgets(t *testing.T, env *apptest.Env) int {
	t.Helper()
	var n int
	if err := env.App.DB.Get(&n, `SELECT count(*) FROM widgets`); err != nil {
		t.Fatal(err)
	}
	return n
}
