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
)

// Backend is every contract a backend serves: the catalog's, auth's, idempotency's,
// the runner's (with the admission and catalog-version parts of it) and OAuth's.
type Backend interface {
	catalog.Store
	auth.Store
	idempotency.Store
	runner.Store
	runnertest.CatalogStore
	runnertest.AdmissionStore
	oauth.Store
}

// Run runs the conformance suite of every contract, each on fresh stores from fresh, so
// that each backend states once that it serves them all.
func Run(t *testing.T, fresh func(t *testing.T) Backend) {
	suites := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"Catalog", func(t *testing.T) { catalogtest.Run(t, func(t *testing.T) catalog.Store { return fresh(t) }) }},
		{"Auth", func(t *testing.T) { authtest.Run(t, func(t *testing.T) auth.Store { return fresh(t) }) }},
		{"Idempotency", func(t *testing.T) { idemtest.Run(t, func(t *testing.T) idempotency.Store { return fresh(t) }) }},
		{"Runner", func(t *testing.T) { runnertest.Run(t, func(t *testing.T) runner.Store { return fresh(t) }) }},
		{"CatalogVersionAdmission", func(t *testing.T) {
			runnertest.RunCatalogVersion(t, func(t *testing.T) runnertest.CatalogStore { return fresh(t) })
		}},
		{"Authority", func(t *testing.T) {
			runnertest.RunAuthority(t, func(t *testing.T) runnertest.CatalogStore { return fresh(t) })
		}},
		{"Admission", func(t *testing.T) {
			runnertest.RunAdmission(t, func(t *testing.T) runnertest.AdmissionStore { return fresh(t) })
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
