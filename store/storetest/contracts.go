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
	t.Run("Catalog", func(t *testing.T) {
		t.Parallel()
		catalogtest.Run(t, func(t *testing.T) catalog.Store { return fresh(t) })
	})
	t.Run("Auth", func(t *testing.T) {
		t.Parallel()
		authtest.Run(t, func(t *testing.T) auth.Store { return fresh(t) })
	})
	t.Run("Idempotency", func(t *testing.T) {
		t.Parallel()
		idemtest.Run(t, func(t *testing.T) idempotency.Store { return fresh(t) })
	})
	t.Run("Runner", func(t *testing.T) {
		t.Parallel()
		runnertest.Run(t, func(t *testing.T) runner.Store { return fresh(t) })
	})
	t.Run("CatalogVersionAdmission", func(t *testing.T) {
		t.Parallel()
		runnertest.RunCatalogVersion(t, func(t *testing.T) runnertest.CatalogStore { return fresh(t) })
	})
	t.Run("Admission", func(t *testing.T) {
		t.Parallel()
		runnertest.RunAdmission(t, func(t *testing.T) runnertest.AdmissionStore { return fresh(t) })
	})
	t.Run("OAuth", func(t *testing.T) {
		t.Parallel()
		oauthtest.Run(t, func(t *testing.T) oauth.Store { return fresh(t) })
	})
}
