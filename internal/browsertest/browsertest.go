// Package browsertest starts the headless Chromium that GoRunner's browser tests (the
// console, the OAuth authorize page) drive with chromedp. Where no Chromium is installed
// those tests skip, unless GORUNNER_BROWSER_REQUIRED=1 (CI) makes them fail.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// RequiredEnv is the variable that, set to 1, makes a missing Chromium fail the test.
const RequiredEnv = "GORUNNER_BROWSER_REQUIRED"

// names are the commands Chromium is installed as, in the order they are looked for.
var names = []string{"chromium", "chromium-browser", "google-chrome"}

// ExecPath returns the path of Chromium on the PATH, or skips t (fails it when
// GORUNNER_BROWSER_REQUIRED=1).
func ExecPath(t testing.TB) string {
	t.Helper()
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(RequiredEnv) == "1" {
		t.Fatal(RequiredEnv + "=1 but no chromium is installed (apt-get install chromium)")
	}
	t.Skip("no chromium: browser tests skipped (apt-get install chromium)")
	return ""
}

// New starts a headless Chromium for t, quiet (no background networking, updates or
// sync, so every request it makes is the page's) and sandboxless (tests run as root in
// CI), and returns a chromedp context that ends after timeout or with the test. extra
// options come after these.
func New(t testing.TB, timeout time.Duration, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ExecPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1200, 900),
	)
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}
