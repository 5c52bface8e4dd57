//go:build !nodevnet

package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser is one headless Chromium tab for the console's tests (the pay
// page test's flags), with the steps every test takes: do (actions under a
// deadline), wait (an element shows), poll (a JS expression answers
// non-null) and signIn; a failing step says what the page showed.
type browser struct {
	t   *testing.T
	ctx context.Context
}

// newBrowser starts Chromium (exe, from chromium(t)) for the test; it is
// closed when the test ends.
func newBrowser(t *testing.T, exe string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The browser starts with the first action; each step has its own
	// deadline.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, ctx: bctx}
}

// dump is what the page shows, for a failure's message.
func (b *browser) dump() string {
	v, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
	return v
}

// do runs actions, each step within 90 s.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v\n%s", what, err, b.dump())
	}
}

// wait waits until the element sel selects is visible.
func (b *browser) wait(what, sel string) {
	b.t.Helper()
	b.do(what+" ("+sel+")", chromedp.WaitVisible(chromedp.CSS(sel)))
}

// poll evaluates a JS expression until it answers a non-null value.
func (b *browser) poll(what, expr string) string {
	b.t.Helper()
	for try := 0; ; try++ {
		v, err := chromedp.Run(b.ctx, chromedp.Poll[string](expr, chromedp.WithPollingTimeout(90*time.Second)))
		if err != nil && contextReplaced(err) && try < 5 {
			// The page's JS context went away under the poll (a
			// navigation still settling, seen in CI): ask the new one.
			continue
		}
		if err != nil {
			b.t.Fatalf("%s: %v\n%s", what, err, b.dump())
		}
		return v
	}
}

// contextReplaced reports whether err is Chromium saying the execution
// context an evaluation ran in was replaced by a navigation: the
// expression never ran to an answer, so asking again is the same question.
func contextReplaced(err error) bool {
	m := err.Error()
	return strings.Contains(m, "Cannot find context with specified id") || strings.Contains(m, "Execution context was destroyed")
}

// eval evaluates a JS expression once.
func (b *browser) eval(what, expr string) {
	b.t.Helper()
	b.do(what, chromedp.Evaluate[chromedp.Void](expr))
}

// signIn types key into the sign-in form at url's /console/signin and
// waits for the agents list.
func (b *browser) signIn(url, key string) {
	b.t.Helper()
	b.do("the sign-in page", chromedp.Navigate(url+"/console/signin"), chromedp.WaitVisible(chromedp.ID("api-key")))
	b.do("sign in", chromedp.SendKeys(chromedp.ID("api-key"), key), chromedp.Click(chromedp.ID("signin")))
	b.poll("signed in", `document.getElementById("agents") ? "yes" : null`)
}

// pickAgent makes agentID the tab's agent (the header's picker).
func (b *browser) pickAgent(agentID string) {
	b.t.Helper()
	b.eval("pick agent "+agentID, `sessionStorage.setItem("veil.agent", `+jsString(agentID)+`)`)
}
