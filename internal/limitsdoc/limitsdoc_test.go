package limitsdoc_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/gorunner/gorunner/api"
	"github.com/gorunner/gorunner/auth"
	"github.com/gorunner/gorunner/catalog"
	"github.com/gorunner/gorunner/client"
	"github.com/gorunner/gorunner/console"
	"github.com/gorunner/gorunner/events"
	"github.com/gorunner/gorunner/expression"
	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/docgen"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/mcpserver"
	"github.com/gorunner/gorunner/oauth"
	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/schedule"
	"github.com/gorunner/gorunner/scheduler"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/tools"
)

var update = flag.Bool("update", false, "rewrite the values of docs/limits.md from the constants")

// root is the module's root; page is the limits page, from it.
const (
	root = "../.."
	page = "docs/limits.md"
)

// named are the limits docs/limits.md names, by the name it gives them, as numbers: sizes and
// counts as themselves, durations in nanoseconds. A row of the "Limits" table naming one
// must give its value; the OAuth table, whose rows name several, must name each.
var named = map[string]int64{
	"api.ReadHeaderTimeout":             int64(api.ReadHeaderTimeout),
	"api.ReadTimeout":                   int64(api.ReadTimeout),
	"api.WriteTimeout":                  int64(api.WriteTimeout),
	"api.IdleTimeout":                   int64(api.IdleTimeout),
	"api.MaxHeaderBytes":                api.MaxHeaderBytes,
	"api.MaxPageBytes":                  api.MaxPageBytes,
	"api.MaxWait":                       int64(api.MaxWait),
	"api.WebhookWait":                   int64(api.WebhookWait),
	"limits.MaxBodyBytes":               limits.MaxBodyBytes,
	"limits.MaxPage":                    limits.MaxPage,
	"limits.MaxRunsExamined":            limits.MaxRunsExamined,
	"auth.MaxScopes":                    auth.MaxScopes,
	"auth.KnownFor":                     int64(auth.KnownFor),
	"auth.TokenCacheFor":                int64(auth.TokenCacheFor),
	"auth.MaxTokensHeld":                auth.MaxTokensHeld,
	"client.DefaultTimeout":             int64(client.DefaultTimeout),
	"console.PageSize":                  console.PageSize,
	"idempotency.MaxKeyLength":          idempotency.MaxKeyLength,
	"idempotency.MaxAnswersHeld":        idempotency.MaxAnswersHeld,
	"idempotency.MaxAnswersHeldBytes":   idempotency.MaxAnswersHeldBytes,
	"catalog.MaxCachedTargets":          catalog.MaxCachedTargets,
	"catalog.MaxCachedTargetBytes":      catalog.MaxCachedTargetBytes,
	"catalog.MaxConnectionHosts":        catalog.MaxConnectionHosts,
	"events.ResyncInterval":             int64(events.ResyncInterval),
	"events.MaxPending":                 events.MaxPending,
	"mcpserver.MaxStdioLineBytes":       mcpserver.MaxStdioLineBytes,
	"mcpserver.MaxStdioCalls":           mcpserver.MaxStdioCalls,
	"mcpserver.MaxQueuedStdioCalls":     mcpserver.MaxQueuedStdioCalls,
	"mcpserver.TaskListPage":            mcpserver.TaskListPage,
	"mcpserver.TaskTTL":                 int64(mcpserver.TaskTTL),
	"mcpserver.MaxAskAttempts":          mcpserver.MaxAskAttempts,
	"mcpserver.AbsentTTL":               int64(mcpserver.AbsentTTL),
	"mcpserver.MaxAbsentNames":          mcpserver.MaxAbsentNames,
	"mcpserver.MaxSessionsPerPrincipal": mcpserver.MaxSessionsPerPrincipal,
	"mcpserver.MaxProgressTokenLength":  mcpserver.MaxProgressTokenLength,
	"mcpserver.MaxBatchMessages":        mcpserver.MaxBatchMessages,
	"mcpserver.MinStateKeyBytes":        mcpserver.MinStateKeyBytes,
	"mcpserver.DefaultPageSize":         mcpserver.DefaultPageSize,
	"mcpserver.DefaultToolTimeout":      int64(mcpserver.DefaultToolTimeout),
	"mcpserver.DefaultMaxToolTimeout":   int64(mcpserver.DefaultMaxToolTimeout),
	"tools.MaxFound":                    tools.MaxFound,
	"tools.MaxQueryLength":              tools.MaxQueryLength,
	"tools.MaxQueryWords":               tools.MaxQueryWords,
	"tools.MaxSuggestions":              tools.MaxSuggestions,
	"tools.MaxWaitSeconds":              int64(tools.MaxWaitSeconds * time.Second),
	"tools.MaxListLimit":                tools.MaxListLimit,
	"runner.MaxWaitsPerPrincipal":       runner.MaxWaitsPerPrincipal,
	"runner.MaxUndeliveredPayloads":     runner.MaxUndeliveredPayloads,
	"runner.MaxAttemptHistory":          runner.MaxAttemptHistory,
	"runner.MaxRecordedInput":           runner.MaxRecordedInput,
	"console.MaxSearchLength":           console.MaxSearchLength,
	"console.MaxSearchExamined":         console.MaxSearchExamined,
	"runner.ResumeWait":                 int64(runner.ResumeWait),
	"runner.MaxUncommittedSteps":        runner.MaxUncommittedSteps,
	"runner.MaxEndedRunsKept":           runner.MaxEndedRunsKept,
	"runner.MaxEndedRunsBytes":          runner.MaxEndedRunsBytes,
	"runner.MaxListedOutputBytes":       runner.MaxListedOutputBytes,
	"runner.MaxBulkRerun":               runner.MaxBulkRerun,
	"runner.MaxListExamined":            runner.MaxListExamined,
	"runner.MaxSweepBatch":              runner.MaxSweepBatch,
	"runner.SweepInterval":              int64(runner.SweepInterval),
	"runner.DefaultRetention":           int64(runner.DefaultRetention),
	"schemas.MinRetention":              int64(schemas.MinRetention),
	"runner.DefaultConcurrency":         runner.DefaultConcurrency,
	"runner.DefaultHTTPConcurrency":     runner.DefaultHTTPConcurrency,
	"runner.DefaultHTTPPerWorkflow":     runner.DefaultHTTPPerWorkflow,
	"runner.HTTPBusyDelay":              int64(runner.HTTPBusyDelay),
	"runner.DefaultAdmissionWork":       int64(runner.DefaultAdmissionWork),
	"runner.MaxVanishedWorkers":         runner.MaxVanishedWorkers,
	"runner.MaxResponseHeaderBytes":     runner.MaxResponseHeaderBytes,
	"runner.MaxResponseBody":            runner.MaxResponseBody,
	"runner.MCPSessionIdle":             int64(runner.MCPSessionIdle),
	"runner.MCPMaxToolPages":            runner.MCPMaxToolPages,
	"runner.MCPToolsTTL":                int64(runner.MCPToolsTTL),
	"runner.MaxHostLength":              runner.MaxHostLength,
	"schemas.MaxSteps":                  schemas.MaxSteps,
	"schemas.MaxTags":                   schemas.MaxTags,
	"schemas.MaxTitleLength":            schemas.MaxTitleLength,
	"schemas.MaxDescriptionLength":      schemas.MaxDescriptionLength,
	"schemas.MaxSchedules":              schemas.MaxSchedules,
	"schemas.MaxConcurrencyLimit":       schemas.MaxConcurrencyLimit,
	"schemas.MaxConcurrencyKey":         schemas.MaxConcurrencyKey,
	"runner.MaxQueueActiveShown":        runner.MaxQueueActiveShown,
	"schedule.MinEvery":                 int64(schedule.MinEvery),
	"scheduler.MaxTicksPerPass":         scheduler.MaxTicksPerPass,
	"schemas.MaxAttempts":               schemas.MaxAttempts,
	"schemas.MaxDepth":                  schemas.MaxDepth,
	"runner.MaxListedRecords":           runner.MaxListedRecords,
	"schemas.MaxNesting":                schemas.MaxNesting,
	"schemas.MaxIterations":             schemas.MaxIterations,
	"schemas.MaxChildIterations":        schemas.MaxChildIterations,
	"schemas.MaxConcurrency":            schemas.MaxConcurrency,
	"schemas.MaxBranches":               schemas.MaxBranches,
	"schemas.MaxSchemaApplications":     schemas.MaxSchemaApplications,
	"schemas.MaxSchemaObjects":          schemas.MaxSchemaObjects,
	"schemas.MaxDuration":               int64(schemas.MaxDuration),
	"schemas.MaxHTTPTimeout":            int64(schemas.MaxHTTPTimeout),
	"expression.MaxExpressionLength":    expression.MaxExpressionLength,
	"expression.MaxNodes":               expression.MaxNodes,
	"expression.MaxValueBytes":          expression.MaxValueBytes,
	"expression.MaxWorkBytes":           expression.MaxWorkBytes,
	"expression.MaxValueDepth":          expression.MaxValueDepth,
	"expression.MaxEvalTime":            int64(expression.MaxEvalTime),
	"oauth.MaxClientDocumentBytes":      oauth.MaxClientDocumentBytes,
	"oauth.MaxRegistrationBytes":        oauth.MaxRegistrationBytes,
	"oauth.MinClientDocumentTTL":        int64(oauth.MinClientDocumentTTL),
	"oauth.MaxClientDocumentTTL":        int64(oauth.MaxClientDocumentTTL),
	"oauth.MaxCachedClientDocuments":    oauth.MaxCachedClientDocuments,
	"oauth.MaxRedirectURIs":             oauth.MaxRedirectURIs,
	"oauth.MaxRedirectURIBytes":         oauth.MaxRedirectURIBytes,
	"oauth.MaxClientNameBytes":          oauth.MaxClientNameBytes,
	"oauth.MaxFormBytes":                oauth.MaxFormBytes,
}

// units are what a value's number is multiplied by, after the unit written after it; any
// other word (or none) counts things.
var units = map[string]int64{
	"KiB": 1 << 10, "MiB": 1 << 20,
	"ms": int64(time.Millisecond), "s": int64(time.Second), "min": int64(time.Minute), "h": int64(time.Hour),
	"years": int64(365 * 24 * time.Hour),
}

var (
	rowName  = regexp.MustCompile("^`([a-z]+)\\.([A-Za-z]+)`")
	rowValue = regexp.MustCompile(`^([0-9][0-9,]*)(?:\s+(\S+))?`)
)

// unit is what the value cell's number is multiplied by.
func unit(m []string) int64 {
	if u, ok := units[strings.TrimRight(m[2], ",;")]; ok {
		return u
	}
	return 1
}

// revalue is the value cell with its leading number made want, in the cell's unit, grouped
// by commas when the cell's number was.
func revalue(t *testing.T, name, cell string, want int64) string {
	t.Helper()
	m := rowValue.FindStringSubmatch(cell)
	require.NotNil(t, m, "%s: the value %q starts with no number", name, cell)
	u := unit(m)
	require.Zero(t, want%u, "%s: %d is no whole number of the unit of %q", name, want, cell)
	n := strconv.FormatInt(want/u, 10)
	if strings.Contains(m[1], ",") {
		n = grouped(n)
	}
	return n + cell[len(m[1]):]
}

// grouped writes the digits n in groups of three: 10000 → 10,000.
func grouped(n string) string {
	for i := len(n) - 3; i > 0; i -= 3 {
		n = n[:i] + "," + n[i:]
	}
	return n
}

// revalueRow is a table row with the value of the exported constant it names put in its
// value cell; other lines (and rows naming unexported constants, out of reach here) are
// returned as they are.
func revalueRow(t *testing.T, line string) string {
	t.Helper()
	if !strings.HasPrefix(line, "| `") {
		return line
	}
	cells := strings.Split(line, "|")
	require.GreaterOrEqual(t, len(cells), 4, line)
	nameCell := strings.TrimSpace(cells[1])
	m := rowName.FindStringSubmatch(nameCell)
	require.NotNil(t, m, "the row %q names no pkg.Name", nameCell)
	if !unicode.IsUpper(rune(m[2][0])) {
		return line
	}
	name := m[1] + "." + m[2]
	want, ok := named[name]
	require.True(t, ok, "%s names %s: add it to named", page, name)
	cells[2] = fmt.Sprintf(" %s ", revalue(t, name, strings.TrimSpace(cells[2]), want))
	return strings.Join(cells, "|")
}

// TestLimitsTable: every row of docs/limits.md naming an exported constant gives its value
// (-update writes them), and every limit known here is named on the page.
func TestLimitsTable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(root, page)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	text := string(raw)
	lines := strings.Split(text, "\n")
	rows := 0
	for i, line := range lines {
		if strings.HasPrefix(line, "| `") {
			rows++
		}
		lines[i] = revalueRow(t, line)
	}
	require.NotZero(t, rows, "%s has limit rows", page)
	for name := range named {
		require.Contains(t, text, "`"+name+"`", "%s is not documented in %s", name, page)
	}
	docgen.Compare(t, path, text, strings.Join(lines, "\n"), *update)
}

// TestRevalue: a value cell keeps its unit, its words and its digit grouping.
func TestRevalue(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cell string
		want int64
		out  string
	}{
		{"64 KiB", 128 << 10, "128 KiB"},
		{"10,000 runs", 20000, "20,000 runs"},
		{"1000 steps", 2000, "2000 steps"},
		{"24 h", int64(48 * time.Hour), "48 h"},
		{"720 h (30 days)", int64(720 * time.Hour), "720 h (30 days)"},
		{"3", 5, "5"},
	} {
		require.Equal(t, c.out, revalue(t, "x", c.cell, c.want), c.cell)
	}
}

// TestEveryMaxAndMinIsNamed: every exported constant of the module whose name starts with
// Max or Min is in named, so TestLimitsTable checks docs/limits.md documents it.
func TestEveryMaxAndMinIsNamed(t *testing.T) {
	t.Parallel()
	limit := regexp.MustCompile(`^(Max|Min)[A-Z]`)
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "interop" || name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				for _, id := range spec.(*ast.ValueSpec).Names {
					if id.IsExported() && limit.MatchString(id.Name) {
						name := f.Name.Name + "." + id.Name
						require.Contains(t, named, name, "%s (%s) is a limit: name it in docs/limits.md and in named", name, path)
					}
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
}
