package browser_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"emi/internal/app/apptest"
)

// shootAt sets the viewport's width and saves a full-page screenshot as
// test-artifacts/screens/<name>-<width>.png.
func shootAt(b *tab, name string, width int64) {
	b.t.Helper()
	b.do("viewport", chromedp.EmulateViewport(width, 900))
	screenshot(b, fmt.Sprintf("%s-%d", name, width))
}

// TestApplicationPageLayoutInTheBrowser: at 1440 px the application page
// puts the evidence left and the decision panel right, and the panel stays
// in view while the last evidence section is scrolled to; sections fold;
// the risk breakdown appears once. The old page stacked the decision above
// 4,800 px of evidence, with the risk table twice: this test failed there.
func TestApplicationPageLayoutInTheBrowser(t *testing.T) {
	t.Parallel()
	env, p := reviewEnv(t)
	app := queueApplication(t, env, p, nil)
	b := newTab(t, env)
	b.signIn(env, apptest.UnderwriterEmail)
	b.do("viewport", chromedp.EmulateViewport(1440, 900))
	b.open("/backoffice/applications/" + app)
	b.waitVisible(`[data-testid="decision-panel"] [data-testid="review-panel"]`)
	if n := b.count(`[data-testid="risk-factors"]`); n > 1 {
		t.Errorf("the risk breakdown is shown %d times", n)
	}
	if !eval[bool](b, `(() => { const d = document.querySelector('[data-testid="decision-panel"]').getBoundingClientRect();
		const e = document.querySelector('[data-testid="evidence"]').getBoundingClientRect(); return d.left >= e.right - 1; })()`) {
		t.Fatal("the decision panel is not to the right of the evidence at 1440 px")
	}
	b.script("scroll to the last section", `(() => { const f = document.querySelectorAll('details.fold');
		return f[f.length - 1].scrollIntoView({block: 'end'}); })()`)
	b.do("scrolled", pollTrue(`window.scrollY > 0`))
	inView := `(() => { const r = document.querySelector('[data-testid="decision-panel"] [data-testid="review-panel"]').getBoundingClientRect();
		return r.top >= 0 && r.top < window.innerHeight && r.bottom > 0; })()`
	if !eval[bool](b, inView) {
		t.Fatalf("the decision panel is out of view at scrollY %v", eval[float64](b, `window.scrollY`))
	}
	screenshot(b, "application-scrolled-1440")
	b.do("fold the members", chromedp.Click(chromedp.CSS(`[data-testid="fold-members"] > summary`)))
	if eval[bool](b, `document.querySelector('[data-testid="fold-members"]').open`) {
		t.Error("a click on a section's title does not fold it")
	}
	b.do("unfold the members", chromedp.Click(chromedp.CSS(`[data-testid="fold-members"] > summary`)))
	// Not `window.scrollTo(0, 0) || true`: since Chromium 150 scrollTo
	// returns a promise, and the expression was that promise, not true.
	b.script("scroll to the top", `window.scrollTo(0, 0)`)
	b.do("at the top", pollTrue(`window.scrollY === 0`))
	shootAt(b, "application", 1440)
	shootAt(b, "application", 390)
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the application page is %d px wide at 390 px", w)
	}
	noCSPViolations(t, b)
}
