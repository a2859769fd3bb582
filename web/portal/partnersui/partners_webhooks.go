package partnersui

import (
	"emi/web/portal/frame"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"emi/internal/emi"
	"emi/internal/service/partners"
	"emi/views/partnersview"
)

// webhooksSection renders the partner's endpoints for its page (nil when
// the role may not see webhooks), in the order sort asks (a partner has a
// handful, sorted in Go; the usual order is the service's).
func (p *Pages) webhooksSection(r *http.Request, partnerID, newURL string, errs map[string]string, sort frame.TableSort) (templ.Component, error) {
	if !frame.CanDo(r, partners.ViewWebhooks) {
		return nil, nil
	}
	eps, err := p.webhooks.Endpoints(r.Context(), partnerID)
	if err != nil {
		return nil, err
	}
	rows := make([]partnersview.EndpointRow, len(eps))
	now := p.frame.Now()
	for i, e := range eps {
		row := partnersview.EndpointRow{ID: e.ID, URL: e.URL, Description: e.Description, Enabled: e.Enabled,
			Types: "all", Status: "enabled", StatusTone: "ok", SuccessRate: "no attempts"}
		if len(e.EventTypes) > 0 {
			names := make([]string, len(e.EventTypes))
			for j, t := range e.EventTypes {
				names[j] = string(t)
			}
			row.Types = strings.Join(names, ", ")
		}
		if !e.Enabled {
			row.Status, row.StatusTone = "disabled", "bad"
			if e.DisabledReason != "" {
				row.Status = "disabled: " + e.DisabledReason
			}
		} else if e.FailingSince != nil {
			row.Status, row.StatusTone = "failing", "warn"
		}
		if e.FailingSince != nil {
			row.FailingSince = frame.FmtTime(*e.FailingSince)
		}
		if rate, ok := e.Health.SuccessRate(); ok {
			row.SuccessRate = fmt.Sprintf("%.0f %% of %d", rate*100, e.Health.Attempts)
		}
		if e.Health.LastAttemptAt != nil {
			row.LastAttempt = frame.FmtTime(*e.Health.LastAttemptAt)
		}
		if e.PreviousValidUntil != nil && now.Before(*e.PreviousValidUntil) {
			row.Rotating = frame.FmtTime(*e.PreviousValidUntil)
		}
		rows[i] = row
	}
	frame.SortRows(r, rows, sort, map[string]func(partnersview.EndpointRow) string{
		"url":          func(e partnersview.EndpointRow) string { return e.URL },
		"events":       func(e partnersview.EndpointRow) string { return e.Types },
		"status":       func(e partnersview.EndpointRow) string { return e.Status },
		"last_attempt": func(e partnersview.EndpointRow) string { return e.LastAttempt },
	}, func(e partnersview.EndpointRow) string { return e.ID })
	// The headers link to the partner's page itself, also when it answers
	// a refused form's POST.
	order := sort.View(r)
	order.Path, order.Query = "/backoffice/partners/"+partnerID, nil
	v := partnersview.WebhooksView{PartnerID: partnerID, Endpoints: rows, CanManage: frame.CanDo(r, partners.ManageWebhooks), NewURL: newURL,
		Errors: errs, Sort: order}
	if len(errs) > 0 {
		// A refused new endpoint (webhookAdd): its event types as typed.
		v.NewTypes = strings.TrimSpace(r.PostFormValue("event_types"))
	}
	return partnersview.Webhooks(v), nil
}

// webhookAdd (POST /partners/{id}/webhooks) registers an endpoint and shows
// its signing secret once.
func (p *Pages) webhookAdd(w http.ResponseWriter, r *http.Request) {
	id := frame.Param(r, "id")
	var types []emi.EventType
	for _, t := range strings.Split(r.PostFormValue("event_types"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			types = append(types, emi.EventType(t))
		}
	}
	url := strings.TrimSpace(r.PostFormValue("url"))
	_, secret, err := p.webhooks.AddEndpoint(r.Context(), id, url, "", types)
	if err != nil {
		status := http.StatusUnprocessableEntity
		switch {
		case frame.ErrorIs(err, emi.ErrWebhookEndpointLimit), frame.ErrorIs(err, emi.ErrWebhookHostLimit):
			// One too many: said beside the URL, as typed.
			status = http.StatusConflict
		case emi.AsError(err).Kind != emi.KindInvalid:
			p.frame.RenderError(w, r, err)
			return
		}
		errs, banner := frame.FieldErrors(err)
		if len(errs) == 0 {
			errs = map[string]string{"url": banner}
		}
		if _, ok := errs["event_types"]; !ok {
			for k, v := range errs {
				if strings.HasPrefix(k, "types") {
					errs["event_types"] = v
				}
			}
		}
		p.renderPartner(w, r, status, id, url, errs)
		return
	}
	p.showCredentialsOnce(w, r, partnersview.Credentials{WebhookSecret: secret, APISecret: ""}, "/backoffice/partners/"+id)
}

// webhookTest (POST /partners/{id}/webhooks/{ep}/test) sends a test event.
// Test, rotate, enable, disable and replay are buttons with nothing typed:
// a refusal is a flash, as there is no input to keep (a refused new
// endpoint keeps what was typed: webhookAdd).
func (p *Pages) webhookTest(w http.ResponseWriter, r *http.Request) {
	id := frame.Param(r, "id")
	if _, err := p.webhooks.SendTest(r.Context(), id, frame.Param(r, "ep")); err != nil {
		p.frame.FlashError(w, r, err, "/backoffice/partners/"+id)
		return
	}
	p.frame.Flash(r.Context(), "ok", "A test event was queued; its delivery shows below within seconds.")
	frame.Redirect(w, r, "/backoffice/partners/"+id+"/events?type="+string(emi.EventWebhookTest))
}

// webhookRotate (POST /partners/{id}/webhooks/{ep}/rotate) shows the new
// secret once; the old one keeps signing until the overlap ends.
func (p *Pages) webhookRotate(w http.ResponseWriter, r *http.Request) {
	id := frame.Param(r, "id")
	secret, until, err := p.webhooks.RotateEndpointSecret(r.Context(), id, frame.Param(r, "ep"))
	if err != nil {
		p.frame.FlashError(w, r, err, "/backoffice/partners/"+id)
		return
	}
	p.frame.Flash(r.Context(), "info", "Deliveries carry both signatures until "+frame.FmtTime(until)+" UTC.")
	p.showCredentialsOnce(w, r, partnersview.Credentials{WebhookSecret: secret}, "/backoffice/partners/"+id)
}

// webhookEnable and webhookDisable (POST /partners/{id}/webhooks/{ep}/…).
func (p *Pages) webhookEnable(w http.ResponseWriter, r *http.Request)  { p.webhookSet(w, r, true) }
func (p *Pages) webhookDisable(w http.ResponseWriter, r *http.Request) { p.webhookSet(w, r, false) }

func (p *Pages) webhookSet(w http.ResponseWriter, r *http.Request, enabled bool) {
	id := frame.Param(r, "id")
	if err := p.webhooks.SetEndpointEnabled(r.Context(), id, frame.Param(r, "ep"), enabled); err != nil {
		p.frame.FlashError(w, r, err, "/backoffice/partners/"+id)
		return
	}
	p.frame.Flash(r.Context(), "ok", map[bool]string{true: "The endpoint was enabled.", false: "The endpoint was disabled."}[enabled])
	frame.Redirect(w, r, "/backoffice/partners/"+id)
}

// replayDelivery (POST /partners/{id}/deliveries/{delivery}/replay) makes a
// new attempt now (audited by the service).
func (p *Pages) replayDelivery(w http.ResponseWriter, r *http.Request) {
	id := frame.Param(r, "id")
	if err := p.webhooks.Replay(r.Context(), id, frame.Param(r, "delivery")); err != nil {
		p.frame.FlashError(w, r, err, "/backoffice/partners/"+id+"/events")
		return
	}
	p.frame.Flash(r.Context(), "ok", "A new delivery attempt was queued.")
	frame.Redirect(w, r, "/backoffice/partners/"+id+"/events")
}

// eventsLog (GET /partners/{id}/events) is the delivery log: events newest
// first, filtered by type, resource, delivery status and date; a pending
// delivery shows when its next retry is due.
func (p *Pages) eventsLog(w http.ResponseWriter, r *http.Request) {
	p.renderEventsLog(w, r, http.StatusOK, r.URL.Query(), nil)
}

// eventsFilter reads the delivery log's filter from q: the service's filter
// (page 1 unless q says otherwise), the form's state, and the fields refused
// (a date that is not one, a status that does not exist).
func eventsFilter(partnerID string, q url.Values) (emi.EventLogFilter, partnersview.EventsFilter) {
	f := emi.EventLogFilter{PartnerID: partnerID, Type: emi.EventType(q.Get("type")), ResourceToken: q.Get("resource"),
		State: emi.DeliveryState(q.Get("status")), Limit: 20}
	view := partnersview.EventsFilter{Type: q.Get("type"), Resource: q.Get("resource"), Status: q.Get("status"), From: q.Get("from"), To: q.Get("to")}
	f.From, f.To, view.Errors = frame.DateRange(q)
	if view.Errors == nil {
		view.Errors = map[string]string{}
	}
	if f.State != "" && !slices.Contains(emi.DeliveryStates, f.State) {
		view.Errors["status"] = "is not a delivery status: choose pending, succeeded, failed or canceled"
	}
	if f.Type != "" && !emi.ValidEventType(f.Type) {
		view.Errors["type"] = "is not an event type: choose one from the list"
	}
	f.Page, _ = strconv.Atoi(q.Get("page"))
	if f.Page < 1 {
		f.Page = 1
	}
	for _, st := range emi.DeliveryStates {
		view.Statuses = append(view.Statuses, string(st))
	}
	view.Types = emi.EventTypeNames()
	return f, view
}

// renderEventsLog renders the delivery log for the filter in q; errs (a
// refused bulk replay's) are added to the filter's own.
func (p *Pages) renderEventsLog(w http.ResponseWriter, r *http.Request, status int, q url.Values, errs map[string]string) {
	id := frame.Param(r, "id")
	f, filter := eventsFilter(id, q)
	for k, v := range errs {
		filter.Errors[k] = v
	}
	// The delivery log is the webhook area's page: its service says who
	// may read it before anything else is read.
	if _, err := p.webhooks.Endpoints(r.Context(), id); err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	pt, _, err := p.partners.Get(r.Context(), id)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v := partnersview.EventsView{PartnerID: id, Filter: filter, CanReplay: frame.CanDo(r, partners.ManageWebhooks), MaxBulk: partners.MaxBulkReplay}
	if len(filter.Errors) > 0 {
		p.frame.Render(w, r, http.StatusUnprocessableEntity, "Delivery log · "+pt.Name, partnersview.Events(v))
		return
	}
	log, err := p.webhooks.EventsLog(r.Context(), f)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v.Rows = make([]partnersview.EventRow, len(log.Items))
	for i, e := range log.Items {
		data, _ := json.Marshal(e.Data)
		row := partnersview.EventRow{ID: e.ID, Type: string(e.Type), Resource: e.ResourceToken, CreatedAt: frame.FmtTime(e.CreatedAt), Data: string(data)}
		for _, d := range e.Deliveries {
			dr := partnersview.DeliveryRow{ID: d.ID, Endpoint: d.EndpointURL, State: string(d.State), StateTone: frame.DeliveryTone(d.State),
				ReplayAsked: d.ReplayRequested}
			if d.State == emi.DeliveryPending && d.NextAttemptAt != nil {
				dr.NextRetry = frame.FmtTime(*d.NextAttemptAt)
			}
			for _, a := range d.AttemptLog {
				ar := partnersview.AttemptRow{At: frame.FmtTime(a.StartedAt), Latency: a.Latency.Round(time.Millisecond).String(),
					Response: a.ResponseExcerpt, Error: a.Error, Replay: a.Replay, Status: "no answer", StatusTone: "bad"}
				if a.Status != 0 {
					ar.Status = strconv.Itoa(a.Status)
					if a.Status >= 200 && a.Status < 300 {
						ar.StatusTone = "ok"
					}
				}
				dr.Attempts = append(dr.Attempts, ar)
			}
			row.Deliveries = append(row.Deliveries, dr)
		}
		v.Rows[i] = row
	}
	if int64(f.Page*f.Limit) < log.Total {
		nq := frame.CloneQuery(q)
		nq.Set("page", strconv.Itoa(f.Page+1))
		v.Next = "/backoffice/partners/" + id + "/events?" + nq.Encode()
	}
	if f.Page > 1 {
		pq := frame.CloneQuery(q)
		pq.Set("page", strconv.Itoa(f.Page-1))
		v.Prev = "/backoffice/partners/" + id + "/events?" + pq.Encode()
	}
	p.frame.Render(w, r, status, "Delivery log · "+pt.Name, partnersview.Events(v))
}

// replayFailed (POST /partners/{id}/deliveries/replay-failed) asks for a
// new attempt of the partner's failed deliveries (after an outage of the
// partner's endpoint, rather than one by one), of the event type and dates
// of the log's filter, at most service.MaxBulkReplay at a time (audited
// with the count by the service). A refused filter answers the log again
// (422) with the reason beside the field; a second submit finds the
// deliveries already asked for and replays nothing more.
func (p *Pages) replayFailed(w http.ResponseWriter, r *http.Request) {
	id := frame.Param(r, "id")
	q := url.Values{"status": {string(emi.DeliveryFailed)}}
	for _, k := range []string{"type", "from", "to"} {
		if v := strings.TrimSpace(r.PostFormValue(k)); v != "" {
			q.Set(k, v)
		}
	}
	f, filter := eventsFilter(id, q)
	if len(filter.Errors) > 0 {
		p.frame.Flash(r.Context(), "bad", "Nothing was replayed: please correct the marked fields.")
		p.renderEventsLog(w, r, http.StatusUnprocessableEntity, q, nil)
		return
	}
	n, err := p.webhooks.ReplayFailed(r.Context(), f)
	if err != nil {
		if emi.AsError(err).Kind == emi.KindInvalid {
			errs, banner := frame.FieldErrors(err)
			p.frame.Flash(r.Context(), "bad", "Nothing was replayed: "+banner)
			p.renderEventsLog(w, r, http.StatusUnprocessableEntity, q, errs)
			return
		}
		p.frame.RenderError(w, r, err)
		return
	}
	switch {
	case n == 0:
		p.frame.Flash(r.Context(), "info", "No failed deliveries to replay: none match, their endpoint is disabled, or their replay was already asked for (perhaps by a colleague just now).")
	case n == partners.MaxBulkReplay:
		p.frame.Flash(r.Context(), "ok", fmt.Sprintf("New attempts were queued for the %d oldest failed deliveries (the most one replay takes). Replay again for the rest.", n))
	case n == 1:
		p.frame.Flash(r.Context(), "ok", "A new attempt was queued for 1 failed delivery.")
	default:
		p.frame.Flash(r.Context(), "ok", fmt.Sprintf("New attempts were queued for %d failed deliveries.", n))
	}
	frame.Redirect(w, r, "/backoffice/partners/"+id+"/events?"+q.Encode())
}
