package partnersui

import (
	"emi/web/portal/frame"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"emi/internal/emi"
	"emi/internal/service/partners"
	"emi/views/partnersview"
)

// The partners screens: the list, a new partner with its first key shown
// once, a partner's page (processing mode, API keys and their rotation,
// revocation and signature version; its webhooks are partners_webhooks.go,
// its request validator partners_validator.go). Rules live in service
// partners.

func partnerRow(p emi.Partner) partnersview.PartnerRow {
	return partnersview.PartnerRow{ID: p.ID, Name: p.Name, Merchant: p.MasterMerchant, Processing: string(p.Processing), Created: frame.FmtTime(p.CreatedAt)}
}

// partnerList (GET /partners).
func (p *Pages) partnerList(w http.ResponseWriter, r *http.Request) {
	list, err := p.partners.List(r.Context())
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	sort := frame.ReadSort(r, "created", "desc", "name", "processing", "created")
	slices.SortStableFunc(list, func(a, b emi.Partner) int {
		var c int
		switch sort.Key {
		case "name":
			c = strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
		case "processing":
			c = strings.Compare(string(a.Processing), string(b.Processing))
		default:
			c = a.CreatedAt.Compare(b.CreatedAt)
		}
		return sort.Apply(c, strings.Compare(a.ID, b.ID))
	})
	rows := make([]partnersview.PartnerRow, len(list))
	for i, pt := range list {
		rows[i] = partnerRow(pt)
	}
	p.frame.Render(w, r, sort.Status(), "Partners", partnersview.Partners(rows, frame.CanDo(r, partners.Manage), sort.View(r)))
}

// partnerNew (GET /partners/new).
func (p *Pages) partnerNew(w http.ResponseWriter, r *http.Request) {
	p.frame.Render(w, r, http.StatusOK, "New partner", partnersview.PartnerNew("", "automatic", "", nil))
}

// partnerCreate (POST /partners) creates the partner and shows its
// credentials once (through a session slot that is read exactly once).
func (p *Pages) partnerCreate(w http.ResponseWriter, r *http.Request) {
	in := emi.PartnerCreate{
		Name:       strings.TrimSpace(r.PostFormValue("name")),
		Processing: emi.Processing(r.PostFormValue("processing")),
		WebhookURL: strings.TrimSpace(r.PostFormValue("webhook_url")),
	}
	creds, err := p.partners.Create(r.Context(), in)
	if err != nil {
		if k := emi.AsError(err).Kind; k != emi.KindInvalid {
			p.frame.RenderError(w, r, err)
			return
		}
		errs, _ := frame.FieldErrors(err)
		p.frame.Render(w, r, http.StatusUnprocessableEntity, "New partner", partnersview.PartnerNew(in.Name, string(in.Processing), in.WebhookURL, errs))
		return
	}
	p.showCredentialsOnce(w, r, partnersview.Credentials{APIKey: creds.APIKey, APISecret: creds.APISecret,
		WebhookSecret: creds.WebhookSecret, Merchant: creds.Merchant}, "/backoffice/partners/"+creds.Partner.ID)
}

// showCredentialsOnce renders the secrets in the answer to the POST itself:
// they are never stored anywhere in clear, so a reload or the back button
// cannot show them again (the response is no-store).
func (p *Pages) showCredentialsOnce(w http.ResponseWriter, r *http.Request, c partnersview.Credentials, back string) {
	p.frame.Render(w, r, http.StatusOK, "Credentials", partnersview.CredentialsOnce(c, back))
}

// partnerDetail (GET /partners/{id}).
func (p *Pages) partnerDetail(w http.ResponseWriter, r *http.Request) {
	p.renderPartner(w, r, http.StatusOK, frame.Param(r, "id"), "", nil)
}

// renderPartner renders a partner's page: details, keys and, for roles that
// may see them, its validator configuration and webhook endpoints (with the
// endpoint form's state).
func (p *Pages) renderPartner(w http.ResponseWriter, r *http.Request, status int, id, newURL string, errs map[string]string) {
	p.renderPartnerPage(w, r, status, id, newURL, errs, nil)
}

// renderPartnerPage is renderPartner with the validator form's state of a
// refused save (nil: the stored configuration).
func (p *Pages) renderPartnerPage(w http.ResponseWriter, r *http.Request, status int, id, newURL string, errs map[string]string, vc *validatorState) {
	pt, keys, err := p.partners.Get(r.Context(), id)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	rows := make([]partnersview.KeyRow, len(keys))
	for i, k := range keys {
		row := partnersview.KeyRow{ID: k.ID, APIKey: k.APIKey, Created: frame.FmtTime(k.CreatedAt), Status: "active", StatusTone: "ok",
			MinSignatureVersion: k.MinSignatureVersion}
		if k.RevokedAt != nil {
			row.Status, row.StatusTone, row.Revoked = "revoked", "bad", true
		}
		if k.PreviousValidUntil != nil && p.frame.Now().Before(*k.PreviousValidUntil) && !row.Revoked {
			row.Overlap = frame.FmtTime(*k.PreviousValidUntil)
			row.Status, row.StatusTone = "rotating", "warn"
		}
		rows[i] = row
	}
	content := []templ.Component{partnersview.PartnerDetail(partnerRow(pt), rows, frame.CanDo(r, partners.Manage))}
	onboarding, err := p.validatorSection(r, id, vc)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	if onboarding != nil {
		content = append(content, onboarding)
	}
	// The endpoints are the page's one sortable table; a role that does not
	// see them has no order to ask for.
	var sort frame.TableSort
	if frame.CanDo(r, partners.ViewWebhooks) {
		sort = frame.ReadSort(r, "", "", "url", "events", "status", "last_attempt")
	}
	if status == http.StatusOK {
		status = sort.Status()
	}
	hooks, err := p.webhooksSection(r, id, newURL, errs, sort)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	if hooks != nil {
		content = append(content, hooks)
	}
	p.frame.Render(w, r, status, pt.Name, templ.Join(content...))
}

// partnerProcessing (POST /partners/{id}/processing). Nothing is typed (a
// select of the modes), so a refusal is a flash: there is no input to keep.
func (p *Pages) partnerProcessing(w http.ResponseWriter, r *http.Request) {
	id := frame.Param(r, "id")
	if err := p.partners.SetProcessing(r.Context(), id, emi.Processing(r.PostFormValue("processing"))); err != nil {
		p.frame.FlashError(w, r, err, "/backoffice/partners/"+id)
		return
	}
	p.frame.Flash(r.Context(), "ok", "Processing mode saved.")
	frame.Redirect(w, r, "/backoffice/partners/"+id)
}

// partnerKeyCreate (POST /partners/{id}/keys). The key forms (create,
// rotate, revoke) are buttons, nothing typed: a refusal is a flash.
func (p *Pages) partnerKeyCreate(w http.ResponseWriter, r *http.Request) {
	id := frame.Param(r, "id")
	creds, err := p.partners.CreateKey(r.Context(), id)
	if err != nil {
		p.frame.FlashError(w, r, err, "/backoffice/partners/"+id)
		return
	}
	p.showCredentialsOnce(w, r, partnersview.Credentials{APIKey: creds.APIKey, APISecret: creds.APISecret}, "/backoffice/partners/"+id)
}

// partnerKeyRotate (POST /partners/{id}/keys/{key}/rotate).
func (p *Pages) partnerKeyRotate(w http.ResponseWriter, r *http.Request) {
	id := frame.Param(r, "id")
	secret, err := p.partners.RotateSecret(r.Context(), frame.Param(r, "key"), r.PostFormValue("confirm") == "overlap")
	if err != nil {
		p.frame.FlashError(w, r, err, "/backoffice/partners/"+id)
		return
	}
	p.showCredentialsOnce(w, r, partnersview.Credentials{APISecret: secret}, "/backoffice/partners/"+id)
}

// partnerKeyRevoke (POST /partners/{id}/keys/{key}/revoke).
func (p *Pages) partnerKeyRevoke(w http.ResponseWriter, r *http.Request) {
	id := frame.Param(r, "id")
	if err := p.partners.RevokeKey(r.Context(), frame.Param(r, "key")); err != nil {
		p.frame.FlashError(w, r, err, "/backoffice/partners/"+id)
		return
	}
	p.frame.Flash(r.Context(), "ok", "The API key was revoked.")
	frame.Redirect(w, r, "/backoffice/partners/"+id)
}

// partnerKeySignatureVersion (POST /partners/{id}/keys/{key}/signature-version):
// sets the lowest signature version the key accepts (contract §2). A
// choice between the versions, nothing typed: a refusal is a flash.
func (p *Pages) partnerKeySignatureVersion(w http.ResponseWriter, r *http.Request) {
	id := frame.Param(r, "id")
	v, err := strconv.Atoi(r.PostFormValue("signature_version"))
	if err != nil {
		v = 0 // refused by the service as a validation error
	}
	if err := p.partners.SetKeySignatureVersion(r.Context(), frame.Param(r, "key"), v); err != nil {
		p.frame.FlashError(w, r, err, "/backoffice/partners/"+id)
		return
	}
	msg := "The API key accepts signature versions 1 and 2."
	if v == emi.SignatureV2 {
		msg = "The API key now requires signature version 2: version 1 requests are refused with 10001."
	}
	p.frame.Flash(r.Context(), "ok", msg)
	frame.Redirect(w, r, "/backoffice/partners/"+id)
}
