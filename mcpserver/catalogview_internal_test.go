package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/tools"
)

// countingCatalog counts its reads by name: none finds a workflow by its name; "flaky"
// fails, "an-id" is the ID of a workflow named otherwise.
type countingCatalog struct {
	Catalog
	mu   sync.Mutex
	gets map[string]int
}

func (c *countingCatalog) Get(_ context.Context, name string) (*catalog.Workflow, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gets[name]++
	switch name {
	case "flaky":
		return nil, errors.New("store unreachable")
	case "an-id":
		return &catalog.Workflow{ID: name, Name: "named-otherwise", Published: true}, nil
	}
	return nil, catalog.ErrNotFound
}

func (c *countingCatalog) reads(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets[name]
}

// viewServer is a Server with just what the tool views need: workflows greet and other in
// both environments, cat as the catalog, *now as the clock.
func viewServer(t *testing.T, cat Catalog, now *time.Time) *Server {
	t.Helper()
	compiled, err := compileCompanions()
	require.NoError(t, err)
	entries := map[string]*entry{}
	for _, name := range []string{"greet", "other"} {
		def, err := schemas.Decode(fmt.Appendf(nil, `{"name":%q,"input":{"type":"object"},"steps":[{"id":"s","set":1}]}`, name))
		require.NoError(t, err)
		tool, err := tools.FromDefinition(def)
		require.NoError(t, err)
		entries[name] = &entry{id: name, source: name, tool: tool}
	}
	s := &Server{deps: Deps{Catalog: cat}, cfg: Config{ListLimit: DefaultListLimit, Now: func() time.Time { return *now }},
		companionSchemas: compiled, envs: map[string]*environment{}, log: slog.New(slog.DiscardHandler)}
	for _, env := range []string{runner.EnvProduction, runner.EnvTest} {
		e := &environment{name: env, tools: entries}
		e.view.Store(newView(entries))
		s.envs[env] = e
	}
	return s
}

// A client calling a made-up name again and again reads the catalog once per AbsentTTL
// and environment, and again after any catalog change; a failed read is not remembered.
func TestLookUpRemembersAbsentNames(t *testing.T) {
	cat := &countingCatalog{gets: map[string]int{}}
	now := time.Unix(1_000_000, 0)
	s := viewServer(t, cat, &now)
	ctx := auth.WithPrincipal(context.Background(), auth.Principal{ID: "p", Scopes: auth.AdminScopes()})
	lookUps := func(env, name string) {
		for range 50 {
			require.False(t, s.lookUp(ctx, env, name))
		}
	}
	lookUps(runner.EnvProduction, "nope")
	require.Equal(t, 1, cat.reads("nope"), "50 calls, one read")
	lookUps(runner.EnvTest, "nope")
	require.Equal(t, 2, cat.reads("nope"), "each environment remembers its own")
	s.catalogChanged(ctx, "some-workflow")
	lookUps(runner.EnvProduction, "nope")
	require.Equal(t, 3, cat.reads("nope"), "a catalog change forgets")
	now = now.Add(AbsentTTL)
	lookUps(runner.EnvProduction, "nope")
	require.Equal(t, 4, cat.reads("nope"), "remembered for AbsentTTL only")
	lookUps(runner.EnvProduction, "flaky")
	require.Equal(t, 50, cat.reads("flaky"), "a failed read says nothing of the name")
	lookUps(runner.EnvProduction, "an-id")
	require.Equal(t, 1, cat.reads("an-id"), "a workflow's ID is no tool name: absent, remembered")
	huge := strings.Repeat("n", 1<<20)
	lookUps(runner.EnvProduction, huge)
	require.Zero(t, cat.reads(huge), "a name no workflow may have is not read")
	require.False(t, s.absent.absent(runner.EnvProduction, huge, now), "nor remembered")
}

// The memory stays under MaxAbsentNames, and a lookup that began before a catalog change
// does not store its answer after it.
func TestAbsentNamesBoundedAndGenerational(t *testing.T) {
	var a absentNames
	now := time.Unix(1_000_000, 0)
	for i := range MaxAbsentNames + 5 {
		a.remember("production", fmt.Sprint("n", i), now, a.generation())
		require.LessOrEqual(t, len(a.until), MaxAbsentNames)
	}
	gen := a.generation()
	a.forget()
	a.remember("production", "late", now, gen)
	require.False(t, a.absent("production", "late", now), "a stale answer is dropped")
}

// A listing being built does not hold up the listings of other keys; requests for the
// same key wait for the one build.
func TestListingBuildsOutsideTheLock(t *testing.T) {
	v := newView(nil)
	started, release := make(chan struct{}), make(chan struct{})
	var builds atomic.Int32
	slow := func() []*mcp.Tool {
		builds.Add(1)
		close(started)
		<-release
		return []*mcp.Tool{{Name: "a"}}
	}
	got := make(chan []*mcp.Tool, 2)
	go func() { got <- v.listing("a", slow) }()
	<-started
	go func() { got <- v.listing("a", func() []*mcp.Tool { builds.Add(1); return nil }) }()
	other := make(chan []*mcp.Tool)
	go func() { other <- v.listing("b", func() []*mcp.Tool { return []*mcp.Tool{{Name: "b"}} }) }()
	select {
	case l := <-other:
		require.Equal(t, "b", l[0].Name)
	case <-time.After(10 * time.Second):
		require.FailNow(t, "another key's listing waited for a build")
	}
	close(release)
	for range 2 {
		require.Equal(t, "a", (<-got)[0].Name)
	}
	require.EqualValues(t, 1, builds.Load(), "one build per key")
}

// A token scoped to one workflow is shown that workflow only, also when the filter is
// handed a lone tool; a lone registered tool (mcp-go's call-time check) passes.
func TestListFilterLoneTool(t *testing.T) {
	now := time.Now()
	s := viewServer(t, &countingCatalog{gets: map[string]int{}}, &now)
	scopes, err := auth.ParseScopeList("runs:write:workflow=greet")
	require.NoError(t, err)
	ctx := auth.WithPrincipal(context.Background(), auth.Principal{ID: "p", Scopes: scopes})
	filter := s.listFilter(runner.EnvProduction)
	view := s.envs[runner.EnvProduction].view.Load()
	greet, other := view.byName["greet"].Tool, view.byName["other"].Tool
	tests := []struct {
		name string
		in   []mcp.Tool
		want []string
	}{
		{"lone workflow outside the scope", []mcp.Tool{other}, nil},
		{"lone workflow in the scope", []mcp.Tool{greet}, []string{"greet"}},
		{"both", []mcp.Tool{greet, other}, []string{"greet"}},
		{"lone Miss at call time", []mcp.Tool{{Name: tools.Miss}}, []string{tools.Miss}},
		{"lone dispatch at call time", []mcp.Tool{{Name: dispatch}}, []string{dispatch}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var names []string
			for _, tool := range filter(ctx, tc.in) {
				names = append(names, tool.Name)
			}
			require.Equal(t, tc.want, names)
		})
	}
}
