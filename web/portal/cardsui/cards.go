package cardsui

import (
	"context"
	"emi/web/portal/frame"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/cards"
	"emi/internal/service/kernel"
	"emi/internal/service/people"
	"emi/views/cardsview"
	"emi/views/components"
	"emi/views/fragments"
	"emi/web/httpx"
)

// Customer service's card screens: the card search, a card's page (status
// and activation with their history, owner, account, program, groups, 3DS,
// delivery, counters, wallet tokens, texts, reveals and audit trail) with
// every action of the partner API, the audited reveal of the card number,
// and the sandbox SMS outbox. Rules (reasons, transitions, permissions,
// the re-authentication of a reveal) live in service.Cards; this file lays
// them out.
//
// A full card number is never put in a URL, a session, a flash or a log:
// the search form is sent as a POST and shows a card number back masked,
// and only the answer to a reveal carries the number.

// revealSeconds is how long a revealed card number stays on the screen.
const revealSeconds = 30

// SearchCards adds cards to the global search (the forms of Cards.Search;
// the hit shows the masked number only).
func (p *Pages) SearchCards(r *http.Request, q string) ([]fragments.Hit, error) {
	if q == "" || p.cards == nil || !frame.CanDo(r, accounts.View) {
		return nil, nil
	}
	if len(q) > frame.MaxQuery {
		q = q[:frame.MaxQuery]
	}
	var list []emi.Card
	var err error
	if _, isPAN := cards.PANQuery(q); isPAN {
		// A full card number: only from the header search's POST and for
		// staff who may reveal (Cards.SearchPAN: quota, audit). A GET
		// (a URL holding the number) finds no card by it.
		if r.Method != http.MethodPost || !frame.CanDo(r, cards.ActionOp(emi.CardReveal)) {
			return nil, nil
		}
		list, err = p.cards.SearchPAN(r.Context(), q)
		if err != nil && emi.AsError(err).Kind == emi.KindRateLimited {
			return []fragments.Hit{{Kind: "card", Title: "Card-number search refused", Detail: frame.Message(emi.AsError(err))}}, nil
		}
	} else {
		list, err = p.cards.Search(r.Context(), q)
	}
	if err != nil && emi.AsError(err).Kind == emi.KindInvalid {
		// Not a card query (a mistyped token, say): the other areas
		// answer it; the card search page says why.
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	hits := make([]fragments.Hit, 0, min(len(list), 20))
	for _, c := range list[:min(len(list), 20)] {
		hits = append(hits, fragments.Hit{Kind: c.Type + " card", Title: c.MaskedPAN() + " · " + frame.FirstNonEmpty(c.OwnerName, "(no owner)"),
			Detail: c.Program + " · " + c.Status, Href: frame.CardHref(c.Token)})
	}
	return hits, nil
}

// cardList (GET /cards, POST /cards) searches cards. The form posts the
// query, so a full card number stays out of the address bar, the history
// and the access log; GET ?q= serves links with the other forms.
func (p *Pages) cardList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	if r.Method == http.MethodPost {
		q = r.PostFormValue("q")
	}
	q = strings.TrimSpace(q)
	if shown := frame.MaskedQuery(q); shown != q {
		// The frame's search box shows ?q= back: never a card number.
		u := *r.URL
		u.RawQuery = ""
		r = r.WithContext(r.Context())
		r.URL = &u
	}
	v := cardsview.CardsView{Q: frame.MaskedQuery(q), Searched: q != "", Empty: "No cards match."}
	// The results sort by their columns through GET links that carry the
	// query, so the search form's POST (which keeps a card number out of
	// addresses) is followed by sortable links for any query but one
	// holding a long run of digits: a card number (that search finds one
	// card) or anything that could be one, an IBAN's account digits
	// included. Those headers do not sort: a number is never put in a link.
	// A new search starts in the usual order.
	sort := frame.ReadSort(r, "", "", "card", "owner", "account", "program", "type", "status", "activated", "created")
	_, isPAN := cards.PANQuery(q)
	if !isPAN && !longDigitRun(q) {
		order := sort.View(r)
		order.Query = url.Values{}
		if q != "" {
			order.Query.Set("q", q)
		}
		v.Sort = &order
	} else {
		sort = frame.TableSort{}
	}
	search := p.cards.Search
	if isPAN && r.Method == http.MethodPost {
		// A full card number only from the form's POST (never a URL), for
		// staff who may reveal, counted and audited as a reveal (telling
		// whether a card has a number is a reveal).
		search = p.cards.SearchPAN
	}
	list, err := search(r.Context(), q)
	if err != nil {
		if k := emi.AsError(err).Kind; k == emi.KindRateLimited {
			v.Errs = map[string]string{"q": frame.Message(emi.AsError(err))}
			p.frame.RenderPrivate(w, r, http.StatusTooManyRequests, "Cards", cardsview.Cards(v))
			return
		} else if k != emi.KindInvalid {
			p.frame.RenderError(w, r, err)
			return
		}
		v.Errs, _ = frame.FieldErrors(err)
		p.frame.RenderPrivate(w, r, http.StatusUnprocessableEntity, "Cards", cardsview.Cards(v))
		return
	}
	if v.Rows, err = p.CardRows(r, list); err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	if tok := strings.ToLower(q); frame.LooksLikeToken(tok) {
		// A token: a card's, or a person's or merchant's, whose cards
		// Cards.Search lists then (the owner's cards never include a card
		// with the owner's token: tokens are random).
		v.Empty = "No card has this token, and no person or company with this token has a card."
		if len(list) > 0 && list[0].Token != tok {
			o := v.Rows[0]
			v.Owner = &cardsview.CardsOwner{Name: o.Owner, Kind: frame.FirstNonEmpty(o.OwnerKind, "owner"), Href: o.OwnerHref, Count: len(list)}
		}
	}
	frame.SortRows(r, v.Rows, sort, map[string]func(cardsview.CardRow) string{
		"card":      func(c cardsview.CardRow) string { return c.Masked[max(len(c.Masked)-4, 0):] },
		"owner":     func(c cardsview.CardRow) string { return c.Owner },
		"account":   func(c cardsview.CardRow) string { return c.Account },
		"program":   func(c cardsview.CardRow) string { return c.Program },
		"type":      func(c cardsview.CardRow) string { return c.Type },
		"status":    func(c cardsview.CardRow) string { return c.Status },
		"activated": func(c cardsview.CardRow) string { return strconv.FormatBool(c.Activated) },
		"created":   func(c cardsview.CardRow) string { return c.Created },
	}, func(c cardsview.CardRow) string { return c.Token })
	p.frame.RenderPrivate(w, r, sort.Status(), "Cards", cardsview.Cards(v))
}

// longDigitRun reports whether q holds 13 digits or more in a row,
// spaces and dashes between them ignored: as long as the shortest card
// number.
func longDigitRun(q string) bool {
	n := 0
	for _, c := range q {
		switch {
		case c >= '0' && c <= '9':
			if n++; n >= 13 {
				return true
			}
		case c == ' ' || c == '-':
		default:
			n = 0
		}
	}
	return false
}

// CardRows makes list rows.
func (p *Pages) CardRows(r *http.Request, list []emi.Card) ([]cardsview.CardRow, error) {
	owners := p.frame.OwnerLinks(r)
	rows := make([]cardsview.CardRow, len(list))
	for i, c := range list {
		row := cardsview.CardRow{Token: c.Token, Href: frame.CardHref(c.Token), Masked: c.MaskedPAN(), Type: c.Type, Status: c.Status,
			StatusTone: frame.CardTone(c.Status), Activated: c.Activated, Owner: frame.FirstNonEmpty(c.OwnerName, "(no owner)"),
			Program: c.Program, ProgramHref: frame.ProgramHref(c.Program), Created: frame.FmtTime(c.CreatedAt)}
		if c.Account != "" {
			row.Account, row.AccountHref = c.Account, frame.AccountHref(c.Account)
		}
		var err error
		if row.OwnerKind, row.OwnerHref, err = owners.Of(emi.Account{User: c.User, Merchant: c.Merchant}); err != nil {
			return nil, err
		}
		if c.User == "" && c.Merchant == "" {
			row.OwnerKind = "non-personalized"
		}
		rows[i] = row
	}
	return rows, nil
}

// OwnerCards lists the cards of a person, a merchant or an account for
// their pages; show is false for roles that may not see cards.
func (p *Pages) OwnerCards(r *http.Request, user, merchant, account string) (bool, []cardsview.CardRow, error) {
	if p.cards == nil || !frame.CanDo(r, accounts.View) {
		return false, nil, nil
	}
	if user == "" && merchant == "" && account == "" {
		return true, nil, nil
	}
	list, err := p.cards.ForOwner(r.Context(), user, merchant, account)
	if err != nil {
		return false, nil, err
	}
	rows, err := p.CardRows(r, list)
	return true, rows, err
}

// cardForm keeps a refused action's input for the re-rendered page.
type cardForm struct {
	which  string
	vals   map[string]string
	errs   map[string]string
	banner string
	// kept is a refused form of a payment's row (which "clear"), named
	// "clear:<authorization>".
	kept *components.Form
}

// cardDetail (GET /cards/{card}).
func (p *Pages) cardDetail(w http.ResponseWriter, r *http.Request) {
	p.renderCardPage(w, r, http.StatusOK, nil)
}

// renderCardPage renders a card's page; f is a refused action's form,
// shown open with its errors.
func (p *Pages) renderCardPage(w http.ResponseWriter, r *http.Request, status int, f *cardForm) {
	ctx := r.Context()
	token := frame.Param(r, "card")
	if !frame.LooksLikeToken(token) {
		p.frame.RenderError(w, r, emi.ErrCardNotFound)
		return
	}
	c, err := p.cards.Get(ctx, token)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v, err := p.cardView(r, c, f)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	currency := "EUR"
	if len(c.Program.Currencies) > 0 {
		currency = c.Program.Currencies[0]
	}
	if v.Payments, err = p.cardPayments(r, c.Card, currency, f); err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	p.frame.RenderPrivate(w, r, status, "Card · "+c.MaskedPAN(), cardsview.CardDetail(v))
}

// cardView lays out a card for its page.
func (p *Pages) cardView(r *http.Request, c cards.CardView, f *cardForm) (cardsview.CardView, error) {
	v := cardsview.CardView{Token: c.Token, Masked: c.MaskedPAN(), Type: c.Type, Status: c.Status, StatusTone: frame.CardTone(c.Status),
		Activated: c.Activated, StatusReason: blockReasonText(c.Status, c.StatusReason)}
	if c.Replaces != "" {
		v.ReplacesHref = frame.CardHref(c.Replaces)
	}
	if c.ReplacedBy != "" {
		v.ReplacedByHref = frame.CardHref(c.ReplacedBy)
	}
	kind, ownerHref, err := p.frame.OwnerLinks(r).Of(emi.Account{User: c.User, Merchant: c.Merchant})
	if err != nil {
		return v, err
	}
	owner := components.KV{Label: "Owner", Value: frame.FirstNonEmpty(c.OwnerName, "(no owner)"), Href: ownerHref}
	if c.User == "" && c.Merchant == "" {
		owner.Value, kind = "", "non-personalized, no owner yet"
	}
	account := components.KV{Label: "Account", Value: c.Account, Mono: true}
	if c.Account != "" {
		account.Href = frame.AccountHref(c.Account)
	} else {
		account.Value, account.Mono = "not assigned", false
	}
	partner := p.frame.PartnerNames(r).KV(r, "Partner", c.PartnerID)
	aml := components.KV{Label: "AML check", Value: c.AML, Mono: true}
	if c.AML != "" && frame.CanDo(r, people.View) {
		aml.Href = "/backoffice/aml/" + c.AML
	}
	activated := "no"
	if c.Activated {
		activated = "yes"
		if c.ActivatedAt != nil {
			activated += ", " + frame.FmtTime(*c.ActivatedAt) + " UTC"
		}
	}
	terminated := ""
	if c.TerminatedAt != nil {
		terminated = frame.FmtTime(*c.TerminatedAt)
	}
	v.Details = []components.KV{
		{Label: "Card number", Value: c.MaskedPAN(), Mono: true},
		{Label: "Expiry", Value: c.Expiry(), Mono: true},
		{Label: "Type", Value: c.Type},
		{Label: "Status", Value: c.Status, Tone: frame.ToneOrNeutral(frame.CardTone(c.Status))},
		{Label: "Block reason", Value: emi.BlockReasonLabel(c.StatusReason)},
		{Label: "Activated", Value: activated},
		{Label: "Can pay", Value: yesOrNo(c.CanPay(p.frame.Now().UTC()))},
		account,
		{Label: "Account status", Value: c.AccountStatus, Tone: frame.ToneOrNeutral(frame.AccountTone(c.AccountStatus))},
		owner, {Label: "Owner type", Value: kind},
		{Label: "Owner token", Value: frame.FirstNonEmpty(c.User, c.Merchant), Mono: true},
		partner,
		{Label: "Program", Value: c.Card.Program, Href: frame.ProgramHref(c.Card.Program), Mono: true},
		aml,
		{Label: "Emboss name", Value: strings.TrimSpace(c.EmbossName + " " + c.EmbossNameLine4)},
		{Label: "Cardholder name", Value: strings.TrimSpace(c.FirstName + " " + c.LastName)},
		{Label: "Alias", Value: c.Alias},
		{Label: "Card token", Value: c.Token, Mono: true},
		{Label: "Issued (UTC)", Value: frame.FmtTime(c.CreatedAt), Mono: true},
		{Label: "Updated (UTC)", Value: frame.FmtTime(c.UpdatedAt), Mono: true},
		{Label: "Terminated (UTC)", Value: terminated, Mono: true},
	}
	v.Counters = []components.KV{
		{Label: "Wrong PIN entries", Value: strconv.Itoa(c.PINErrors), Mono: true},
		{Label: "Wrong CVV entries", Value: strconv.Itoa(c.CVVErrors), Mono: true},
	}
	otp := "not enrolled"
	if c.ThreeDS.OTPSMS != "" {
		otp = emi.MaskPhone(c.ThreeDS.OTPSMS)
	}
	v.ThreeDS = []components.KV{
		{Label: "3DS", Value: map[bool]string{true: "enrolled", false: "not enrolled"}[c.ThreeDS.Enrolled()],
			Tone: map[bool]string{true: "ok", false: "neutral"}[c.ThreeDS.Enrolled()]},
		{Label: "3DS codes by SMS to", Value: otp, Mono: c.ThreeDS.OTPSMS != ""},
		{Label: "3DS biometric", Value: yesOrNo(c.ThreeDS.Biometric)},
	}
	if d := c.Delivery; d != nil {
		phone := ""
		if d.Phone != "" {
			phone = emi.MaskPhone(d.Phone)
		}
		v.Delivery = []components.KV{
			{Label: "Name", Value: strings.TrimSpace(d.FirstName + " " + d.LastName)},
			{Label: "Address", Value: d.Address1}, {Label: "Address line 2", Value: d.Address2},
			{Label: "City", Value: d.City}, {Label: "County", Value: d.County},
			{Label: "Postcode", Value: d.Zip}, {Label: "Country", Value: d.Country},
			{Label: "Phone", Value: phone, Mono: true}, {Label: "Method", Value: d.Method},
		}
	}
	for _, kind := range emi.GroupKinds {
		v.Groups = append(v.Groups, cardsview.CardGroupRow{Kind: kind, Label: strings.ReplaceAll(kind, "_", " "), Code: c.Groups[kind],
			Codes: c.Program.Groups[kind]})
	}

	// Names of the staff who acted: the card history names them (the
	// store knows), roles that list staff get links.
	staff := p.frame.StaffNames(r)
	names := map[string]string{}
	for _, h := range c.History {
		if h.ActorName != "" && h.ActorName != h.Actor {
			names[h.Actor] = h.ActorName
		}
	}
	who := func(id string) (string, string) {
		n, href := frame.ActorOf(r, id, staff, nil)
		if name, ok := names[id]; ok && href == "" && !strings.HasSuffix(n, " (you)") {
			return name, ""
		}
		return n, href
	}
	for i := len(c.History) - 1; i >= 0; i-- {
		h := c.History[i]
		row := cardsview.CardHistoryRow{At: frame.FmtTime(h.At), Change: h.Change, From: h.From, To: h.To, Reason: h.Reason,
			ReasonCode: emi.BlockReasonLabel(h.ReasonCode)}
		if h.Change == "status" || h.Change == "issued" {
			row.ToTone = frame.ToneOrNeutral(frame.CardTone(h.To))
		}
		row.Actor, row.ActorHref = who(h.Actor)
		if row.ActorHref == "" && !strings.HasSuffix(row.Actor, " (you)") && h.ActorName != "" {
			row.Actor = h.ActorName
		}
		v.History = append(v.History, row)
	}
	for _, wt := range c.Wallets {
		st := c.WalletStatus()
		v.Wallets = append(v.Wallets, cardsview.WalletRow{Token: wt.Token, Wallet: wt.Wallet, Device: wt.DeviceName,
			Created: frame.FmtTime(wt.CreatedAt), Status: st, StatusTone: frame.WalletTone(st)})
	}
	v.SMS = smsRows(c.SMS)
	for _, e := range c.Reveals {
		row := cardsview.RevealRow{At: frame.FmtTime(e.At), Outcome: string(e.Outcome), OutcomeTone: frame.AuditRow(r, e).OutcomeTone}
		switch e.ActorType {
		case emi.ActorStaff:
			row.Actor, row.ActorHref = who(e.ActorID)
			if name := c.StaffNames[e.ActorID]; row.ActorHref == "" && !strings.HasSuffix(row.Actor, " (you)") && name != "" {
				row.Actor = name
			}
		case emi.ActorPartnerKey:
			row.Actor = "partner API"
		default:
			row.Actor = string(e.ActorType) + " " + e.ActorID
		}
		row.Fields = revealFields(e.Changes)
		row.Reason, _ = e.Changes["reason"].(string)
		row.Why, _ = e.Changes["why"].(string)
		v.Reveals = append(v.Reveals, row)
	}
	for _, e := range c.Audit {
		v.Audit = append(v.Audit, frame.AuditRow(r, e))
	}
	p.frame.NameAuditIDs(r, v.Audit)
	if frame.CanDo(r, kernel.ViewAudit) {
		v.AuditHref = "/backoffice/audit?resource_type=card&resource_token=" + url.QueryEscape(c.Token)
	}
	caps := p.cards.Capabilities(r.Context(), c)
	if caps.Manages {
		v.Actions = cardActions(c, caps, f)
	}
	if caps.Can(emi.CardReveal) {
		v.Reveal = &cardsview.CardReveal{Action: frame.CardHref(c.Token) + "/reveal", CardHref: frame.CardHref(c.Token), Masked: c.MaskedPAN(),
			HideAfter: revealSeconds}
	}
	return v, nil
}

// blockReasonText says why a blocked or terminated card is so ("reported
// stolen", "blocked: fraud suspected"); "" when it has no reason code.
func blockReasonText(status, code string) string {
	switch {
	case code == "":
		return ""
	case emi.BlockTerminates(code):
		return "reported " + emi.BlockReasonLabel(code)
	case status == emi.CardTerminated:
		return "terminated: " + emi.BlockReasonLabel(code)
	}
	return "blocked: " + emi.BlockReasonLabel(code)
}

// blockReasonChoice is a reason code as the block form offers it.
func blockReasonChoice(code string) string {
	switch code {
	case emi.BlockLost:
		return "Lost: terminates the card, a replacement can be issued"
	case emi.BlockStolen:
		return "Stolen: terminates the card, a replacement can be issued"
	case emi.BlockFraudSuspected:
		return "Fraud suspected: blocked until unblocked"
	case emi.BlockCustomerRequest:
		return "Customer request: blocked until unblocked"
	}
	return "Other (say why in the note)"
}

// revealFields names what a reveal opened ("card number", "PIN by SMS").
func revealFields(changes map[string]any) string {
	label := map[string]string{"pan": "card number", "pan_first_half": "first half of the number", "pan_second_half": "second half of the number",
		"cvv": "CVV2", "expiry": "expiry", "pin": "PIN"}
	var out []string
	if list, ok := changes["fields"].([]any); ok {
		for _, f := range list {
			s, _ := f.(string)
			out = append(out, frame.FirstNonEmpty(label[s], s))
		}
	}
	s := strings.Join(out, ", ")
	if ch, _ := changes["channel"].(string); ch == "sms" {
		s += " by SMS"
		if to, _ := changes["to"].(string); to != "" {
			s += " to " + to
		}
	}
	return s
}

// smsRows lays out texts: the PIN is already masked by the service; the
// phone number is masked here.
func smsRows(list []emi.SMSMessage) []cardsview.SMSRow {
	rows := make([]cardsview.SMSRow, 0, len(list))
	for _, m := range list {
		row := cardsview.SMSRow{At: frame.FmtTime(m.CreatedAt), To: emi.MaskPhone(m.To), Text: m.TextMasked, Provider: m.Provider,
			Status: m.Status, Error: m.Error}
		row.StatusTone = frame.SMSTone(m.Status)
		if m.Card != nil {
			row.Card, row.CardHref = frame.ShortID(*m.Card), frame.CardHref(*m.Card)
		}
		rows = append(rows, row)
	}
	return rows
}

func yesOrNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// cardActions are the forms of the actions the service allows the
// signed-in staff member on the card now (caps: cards.Capabilities).
func cardActions(c cards.CardView, caps cards.CardCapabilities, f *cardForm) *cardsview.CardActions {
	a := &cardsview.CardActions{Base: frame.CardHref(c.Token), Terminated: caps.Final}
	a.CanActivate = caps.Can(emi.CardActivate)
	a.CanDeactivate = caps.Can(emi.CardBlock)
	a.CanReactivate = caps.Can(emi.CardUnblock)
	a.CanReplace = caps.Can(emi.CardReplace)
	a.Reported = blockReasonText(c.Status, c.StatusReason)
	for _, code := range emi.BlockReasons {
		a.BlockReasons = append(a.BlockReasons, cardsview.CardChoice{Value: code, Label: blockReasonChoice(code)})
	}
	if c.ReplacedBy != "" {
		a.ReplacedByHref = frame.CardHref(c.ReplacedBy)
	}
	a.CanConvert = caps.Can(emi.CardConvert)
	a.CanAssign = caps.Can(emi.CardAssign)
	a.CanSendPIN = caps.Can(emi.CardSendPIN)
	a.CanResetPIN, a.Can3DS, a.CanSetGroups, a.CanTerminate = caps.Can(emi.CardResetPIN), caps.Can(emi.CardSet3DS),
		caps.Can(emi.CardSetGroups), caps.Can(emi.CardTerminate)
	a.Enrolled, a.OTPEnrolled = c.ThreeDS.Enrolled(), c.ThreeDS.OTPSMS != ""
	for _, kind := range emi.GroupKinds {
		a.Groups = append(a.Groups, cardsview.CardGroupRow{Kind: kind, Label: strings.ReplaceAll(kind, "_", " "), Code: c.Groups[kind],
			Codes: c.Program.Groups[kind]})
	}
	if f != nil {
		a.Open, a.Vals, a.Errs, a.Banner = f.which, f.vals, f.errs, f.banner
	}
	return a
}

// cardFieldErrors maps a service error's fields to the form's inputs,
// which are named by the JSON path (delivery_details.city).
func cardFieldErrors(e *emi.Error) map[string]string {
	errs := map[string]string{}
	for _, f := range e.Fields {
		if _, dup := errs[f.Field]; !dup {
			errs[f.Field] = f.Message
		}
	}
	return errs
}

// postedValues keeps a form's input to show it back: never a secret (the
// staff member's password or code, a PIN).
func postedValues(r *http.Request) map[string]string {
	vals := map[string]string{}
	for k, v := range r.PostForm {
		if k != "secret" && k != "pin" && len(v) > 0 {
			vals[k] = v[0]
		}
	}
	return vals
}

// cardChange runs one card action: fn calls the service; a refused action
// goes back to the page with the form open (invalid input, or a rule about
// a field), or as a flash (a state that does not allow it).
func (p *Pages) cardChange(w http.ResponseWriter, r *http.Request, which string, fn func(ctx context.Context, token, reason string) (string, error)) {
	p.cardChangeTo(w, r, which, func(ctx context.Context, token, reason string) (string, string, error) {
		done, err := fn(ctx, token, reason)
		return done, "", err
	})
}

// cardChangeTo is cardChange for an action that leads to another page
// (a replacement leads to the new card): fn returns where to go, "" for
// the card's own page.
func (p *Pages) cardChangeTo(w http.ResponseWriter, r *http.Request, which string, fn func(ctx context.Context, token, reason string) (string, string, error)) {
	token := frame.Param(r, "card")
	if !frame.LooksLikeToken(token) {
		p.frame.RenderError(w, r, emi.ErrCardNotFound)
		return
	}
	if err := r.ParseForm(); err != nil {
		p.frame.RenderError(w, r, emi.ErrBadRequest)
		return
	}
	done, next, err := fn(r.Context(), token, r.PostFormValue("reason"))
	if err != nil {
		p.cardRefused(w, r, err, which, token)
		return
	}
	p.frame.Flash(r.Context(), "ok", done)
	frame.Redirect(w, r, frame.FirstNonEmpty(next, frame.CardHref(token)))
}

func (p *Pages) cardRefused(w http.ResponseWriter, r *http.Request, err error, which, token string) {
	e := emi.AsError(err)
	switch {
	case e.Kind == emi.KindForbidden || e.Kind == emi.KindNotFound || e.Kind == emi.KindInternal:
		p.frame.RenderError(w, r, err)
	case e.Kind == emi.KindInvalid || len(e.Fields) > 0:
		f := &cardForm{which: which, vals: postedValues(r), errs: cardFieldErrors(e), banner: frame.Message(e)}
		if msg, ok := f.errs[""]; ok {
			f.banner += " " + msg
		}
		p.frame.Flash(r.Context(), "bad", frame.Message(e))
		p.renderCardPage(w, r, formStatus(e), f)
	default:
		p.frame.Flash(r.Context(), "bad", conflictMessage(e))
		frame.Redirect(w, r, frame.CardHref(token))
	}
}

// conflictMessage is a refusal by the card's state with the service's
// reason ("the card was reported stolen: …"), which says what to do
// instead; other refusals keep their message alone.
func conflictMessage(e *emi.Error) string {
	msg := frame.Message(e)
	if e.Kind != emi.KindConflict || e.Detail == "" {
		return msg
	}
	return msg + " " + strings.ToUpper(e.Detail[:1]) + e.Detail[1:] + "."
}

// formStatus is the status of a form shown back with its errors: 422 for
// invalid input, as the other screens answer, else the kind's status.
func formStatus(e *emi.Error) int {
	if e.Kind == emi.KindInvalid {
		return http.StatusUnprocessableEntity
	}
	return httpx.Status(e.Kind)
}

// cardActivate (POST /cards/{card}/activate).
func (p *Pages) cardActivate(w http.ResponseWriter, r *http.Request) {
	p.cardChange(w, r, "activate", func(ctx context.Context, token, reason string) (string, error) {
		_, err := p.cards.Activate(ctx, token, r.PostFormValue("aml"), reason)
		return "Card activated: it can be used once it is active and its account is active. The partner is told (card.activated).", err
	})
}

// cardStatus (POST /cards/{card}/status) unblocks the card (status
// active). status inactive is a block and needs a reason code as the block
// form does (cardBlock): an old "Set inactive" form sent again without one
// is refused, and changes nothing.
func (p *Pages) cardStatus(w http.ResponseWriter, r *http.Request) {
	if r.PostFormValue("status") == emi.CardInactive {
		p.cardBlock(w, r)
		return
	}
	status := r.PostFormValue("status")
	p.cardChange(w, r, "active", func(ctx context.Context, token, reason string) (string, error) {
		_, err := p.cards.SetStatus(ctx, token, status, reason)
		return "Card unblocked: it accepts payments again. The partner is told (card.status_changed).", err
	})
}

// cardBlock (POST /cards/{card}/block) blocks the card with a reason code
// and a note (required with other). Lost and stolen terminate the card
// (service.Cards.Block): the page then offers a replacement.
func (p *Pages) cardBlock(w http.ResponseWriter, r *http.Request) {
	code := strings.TrimSpace(r.PostFormValue("reason_code"))
	p.cardChange(w, r, "block", func(ctx context.Context, token, reason string) (string, error) {
		_, err := p.cards.Block(ctx, token, code, reason)
		if emi.BlockTerminates(code) {
			return "Card reported " + emi.BlockReasonLabel(code) + " and terminated: it can never be used again, its CVV2 and PIN are erased. " +
				"The partner is told (card.status_changed, reason " + code + "). Issue a replacement card from the actions above.", err
		}
		return "Card blocked (" + emi.BlockReasonLabel(code) + "): payments are refused until it is unblocked. " +
			"The partner is told (card.status_changed, reason " + code + ").", err
	})
}

// cardTerminate (POST /cards/{card}/terminate).
func (p *Pages) cardTerminate(w http.ResponseWriter, r *http.Request) {
	p.cardChange(w, r, "terminate", func(ctx context.Context, token, reason string) (string, error) {
		_, err := p.cards.Terminate(ctx, token, reason)
		return "Card terminated: this is final. Its CVV2 and PIN are erased. The partner is told (card.status_changed).", err
	})
}

// cardReplace (POST /cards/{card}/replace) issues the replacement of a
// terminated card and goes to the new card's page.
func (p *Pages) cardReplace(w http.ResponseWriter, r *http.Request) {
	p.cardChangeTo(w, r, "replace", func(ctx context.Context, token, reason string) (string, string, error) {
		c, err := p.cards.Replace(ctx, token, r.PostFormValue("aml"), reason)
		if err != nil {
			return "", "", err
		}
		done := "Replacement card " + c.MaskedPAN() + " issued on the account"
		if c.Type == emi.CardPlastic {
			done += ": it is sent to the old card's delivery address and is activated once the cardholder has it"
		}
		return done + ". The cardholder gets its PIN from the partner's app or by SMS. The partner is told (card.replaced).",
			frame.CardHref(c.Token), nil
	})
}

// deliveryFields are the convert form's inputs, by JSON path.
var deliveryFields = []string{"first_name", "last_name", "address1", "address2", "city", "county", "zip", "country", "phone", "method"}

// cardConvert (POST /cards/{card}/convert): delivery details when any is
// given, else the card's own.
func (p *Pages) cardConvert(w http.ResponseWriter, r *http.Request) {
	p.cardChange(w, r, "convert", func(ctx context.Context, token, reason string) (string, error) {
		v := func(name string) string { return r.PostFormValue("delivery_details." + name) }
		var d *emi.Delivery
		if slices.ContainsFunc(deliveryFields, func(n string) bool { return v(n) != "" }) {
			d = &emi.Delivery{FirstName: v("first_name"), LastName: v("last_name"), Address1: v("address1"), Address2: v("address2"),
				City: v("city"), County: v("county"), Zip: v("zip"), Country: v("country"), Phone: v("phone"), Method: v("method")}
		}
		_, err := p.cards.Convert(ctx, token, d, reason)
		return "Card converted to plastic: same number, new expiry and CVV2. The partner is told (card.converted).", err
	})
}

// cardAssign (POST /cards/{card}/assign).
func (p *Pages) cardAssign(w http.ResponseWriter, r *http.Request) {
	p.cardChange(w, r, "assign", func(ctx context.Context, token, reason string) (string, error) {
		_, err := p.cards.Assign(ctx, token, r.PostFormValue("account"), r.PostFormValue("aml"), reason)
		return "Card assigned to the account.", err
	})
}

// cardGroups (POST /cards/{card}/groups): "keep" (or no value) keeps a
// group, "none" removes it, a code sets it.
func (p *Pages) cardGroups(w http.ResponseWriter, r *http.Request) {
	p.cardChange(w, r, "groups", func(ctx context.Context, token, reason string) (string, error) {
		pick := func(kind string) *string {
			switch v := r.PostFormValue(kind); v {
			case "", cardsview.GroupKeep:
				return nil
			case cardsview.GroupNone:
				none := ""
				return &none
			default:
				return &v
			}
		}
		g := emi.CardGroups{Usage: pick("usage"), Fees: pick("fees"), ScheduleFees: pick("schedule_fees"),
			WebServiceFees: pick("web_service_fees"), Limits: pick("limits"), Linkage: pick("linkage"), MCC: pick("mcc"),
			Whitelist: pick("whitelist")}
		_, err := p.cards.SetGroups(ctx, token, g, reason)
		return "Groups saved.", err
	})
}

// card3DSEnrol (POST /cards/{card}/3ds/enrol).
func (p *Pages) card3DSEnrol(w http.ResponseWriter, r *http.Request) {
	p.cardChange(w, r, "3ds-enrol", func(ctx context.Context, token, reason string) (string, error) {
		in := emi.ThreeDSEnrol{OTPSMS: r.PostFormValue("otp_sms"), Biometric: r.PostFormValue("biometric") == "true"}
		_, err := p.cards.Enrol3DS(ctx, token, in, reason)
		return "Card enrolled in 3DS.", err
	})
}

// card3DSUpdate (POST /cards/{card}/3ds/update).
func (p *Pages) card3DSUpdate(w http.ResponseWriter, r *http.Request) {
	p.cardChange(w, r, "3ds-update", func(ctx context.Context, token, reason string) (string, error) {
		_, err := p.cards.Update3DS(ctx, token, r.PostFormValue("otp_sms"), reason)
		return "3DS phone number changed.", err
	})
}

// card3DSRemove (POST /cards/{card}/3ds/remove).
func (p *Pages) card3DSRemove(w http.ResponseWriter, r *http.Request) {
	p.cardChange(w, r, "3ds-remove", func(ctx context.Context, token, reason string) (string, error) {
		_, err := p.cards.Remove3DS(ctx, token, r.PostFormValue("type"), reason)
		return "3DS removed.", err
	})
}

// cardResetPIN (POST /cards/{card}/pin/reset).
func (p *Pages) cardResetPIN(w http.ResponseWriter, r *http.Request) {
	p.cardChange(w, r, "pin-reset", func(ctx context.Context, token, reason string) (string, error) {
		_, err := p.cards.ResetPIN(ctx, token, reason)
		return "PIN and CVV error counters reset.", err
	})
}

// cardSendPIN (POST /cards/{card}/pin/send).
func (p *Pages) cardSendPIN(w http.ResponseWriter, r *http.Request) {
	p.cardChange(w, r, "pin-send", func(ctx context.Context, token, reason string) (string, error) {
		m, err := p.cards.SendPIN(ctx, token, reason)
		return "PIN sent by SMS to " + emi.MaskPhone(m.To) + ".", err
	})
}

// cardReveal (POST /cards/{card}/reveal) shows the full card number after
// the staff member re-enters their password or TOTP code and gives a
// reason. The service audits every attempt. The answer (an htmx fragment,
// or a page without JavaScript) is the only one that carries the number;
// it is never cached, and static/js/app.js hides the number after
// revealSeconds.
func (p *Pages) cardReveal(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	token := frame.Param(r, "card")
	if !frame.LooksLikeToken(token) {
		p.frame.RenderError(w, r, emi.ErrCardNotFound)
		return
	}
	reason := r.PostFormValue("reason")
	v := cardsview.CardReveal{Action: frame.CardHref(token) + "/reveal", CardHref: frame.CardHref(token), HideAfter: revealSeconds}
	got, err := p.cards.StaffReveal(r.Context(), p.stepUp, token, r.PostFormValue("secret"), reason)
	if err != nil {
		e := emi.AsError(err)
		switch e.Kind {
		case emi.KindForbidden, emi.KindNotFound, emi.KindInternal:
			p.frame.RenderError(w, r, err)
			return
		}
		v.Reason, v.Errs, v.Banner = reason, cardFieldErrors(e), frame.Message(e)
		p.renderReveal(w, r, formStatus(e), v)
		return
	}
	v.PAN, v.Masked = groupDigits(got.PAN), cards.MaskPAN(got.PAN)
	p.renderReveal(w, r, http.StatusOK, v)
}

func (p *Pages) renderReveal(w http.ResponseWriter, r *http.Request, status int, v cardsview.CardReveal) {
	if v.Masked == "" {
		v.Masked = "this card"
	}
	if r.Header.Get("HX-Request") == "true" && r.Header.Get("HX-Boosted") != "true" {
		p.frame.RenderPrivate(w, r, status, "Card number", cardsview.CardRevealBox(v))
		return
	}
	p.frame.RenderPrivate(w, r, status, "Card number", cardsview.CardRevealPage(v))
}

// groupDigits writes a card number in groups of four digits.
func groupDigits(pan string) string {
	var b strings.Builder
	for i := 0; i < len(pan); i++ {
		if i > 0 && i%4 == 0 {
			b.WriteByte(' ')
		}
		b.WriteByte(pan[i])
	}
	return b.String()
}

// smsOutbox (GET /sms) is the sandbox SMS outbox.
func (p *Pages) smsOutbox(w http.ResponseWriter, r *http.Request) {
	list, err := p.cards.Outbox(r.Context())
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	p.frame.RenderPrivate(w, r, http.StatusOK, "SMS outbox", cardsview.SMSOutbox(smsRows(list)))
}
