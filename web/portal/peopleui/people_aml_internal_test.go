package peopleui

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"emi/internal/emi"
	"emi/views/peopleview"
)

// TestHitViewShowsHowTokensMatched: the hit view's token alignment shows
// each pair's weight and, in words, how it matched (initial, joined form,
// given-name equivalent, transliteration fold, possible middle name), as
// the screening engine states it; breakdowns stored before these were
// recorded still render.
func TestHitViewShowsHowTokensMatched(t *testing.T) {
	hit := emi.AMLHit{N: 1, List: "ofac_sdn", EntryID: "12179", EntryType: "individual", Name: "COBO LEDESMA, Juan Carlos",
		MatchedName: "COBO LEDESMA, Juan Carlos", Score: 0.986, Fields: []string{"name"},
		Breakdown: emi.AMLBreakdown{NameScore: 0.986, Birthday: "unknown", Nationality: "unknown", Tokens: []emi.AMLTokenMatch{
			{Query: "juan", Entry: "juan", Similarity: 1, Weight: 1, Kind: "exact", Note: "same name part"},
			{Query: "c", Entry: "carlos", Similarity: 0.9, Weight: 0.5, Kind: "initial", Note: "initial C. ↔ CARLOS, weight 0.5"},
			{Query: "cobo", Entry: "cobo", Similarity: 1, Weight: 1, Kind: "exact", Note: "same name part"},
			{Query: "ledesmaalberto", Entry: "ledesma alberto", Similarity: 1, Weight: 1, Kind: "joined", Note: "joined form LEDESMAALBERTO ↔ LEDESMA + ALBERTO, similarity 1"},
			{Query: "pedro", Weight: 0.2, Kind: "middle", Note: "possible middle name PEDRO, not in the listed name, weight 0.2"},
			{Query: "old", Entry: "old", Similarity: 1}, // stored before weights and notes
		}}}
	hv := hitView(hit)
	var b bytes.Buffer
	if err := peopleview.AMLCheck(peopleview.AMLCheckView{Token: "chk", Hits: []peopleview.AMLHitView{hv}}).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	body := b.String()
	if n := strings.Count(body, `data-testid="token-row"`); n != 6 {
		t.Fatalf("%d token rows, want 6", n)
	}
	for _, want := range []string{
		"initial C. ↔ CARLOS, weight 0.5", "<td class=\"mono\">0.5</td>",
		"joined form LEDESMAALBERTO ↔ LEDESMA + ALBERTO", "possible middle name PEDRO", "<td class=\"mono\">0.2</td>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the hit view lacks %q", want)
		}
	}
}
