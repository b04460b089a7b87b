package storetest

import (
	"testing"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/auth/authtest"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/catalog/catalogtest"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/idempotency/idemtest"
	"github.com/gorunner/gorunner/oauth"
	"github.com/gorunner/gorunner/oauth/oauthtest"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/runner/runnertest"
	"github.com/gorunner/gorunner/store"
)

// Run runs the conformance suite of every contract, each on fresh stores from fresh, so
// that each backend states once that it serves them all.
func Run(t *testing.T, fresh func(t *testing.T) store.Backend) {
	suites := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"Catalog", func(t *testing.T) { catalogtest.Run(t, func(t *testing.T) catalog.Store { return fresh(t) }) }},
		{"Auth", func(t *testing.T) { authtest.Run(t, func(t *testing.T) auth.Store { return fresh(t) }) }},
		{"Idempotency", func(t *testing.T) { idemtest.Run(t, func(t *testing.T) idempotency.Store { return fresh(t) }) }},
		{"Runner", func(t *testing.T) { runnertest.Run(t, func(t *testing.T) runner.Store { return fresh(t) }) }},
		{"CatalogVersionAdmission", func(t *testing.T) {
			RunCatalogVersion(t, fresh)
		}},
		{"Authority", func(t *testing.T) {
			RunAuthority(t, fresh)
		}},
		{"Admission", func(t *testing.T) {
			RunAdmission(t, fresh)
		}},
		{"OAuth", func(t *testing.T) { oauthtest.Run(t, func(t *testing.T) oauth.Store { return fresh(t) }) }},
	}
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			s.run(t)
		})
	}
}
