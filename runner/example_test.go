package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gorunner/gorunner/runner"
	"github.com/gorunner/gorunner/store/sqlitestore"
)

// oneWorkflow resolves every name to one definition.
type oneWorkflow json.RawMessage

func (w oneWorkflow) Resolve(_ context.Context, name, _ string) (*runner.Target, error) {
	return &runner.Target{WorkflowID: name, Name: name, Version: 1, Definition: json.RawMessage(w)}, nil
}

func ExampleEngine_Submit() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "runner-example")
	defer os.RemoveAll(dir)
	store, err := sqlitestore.Open(ctx, filepath.Join(dir, "db"))
	if err != nil {
		panic(err)
	}
	defer store.Close()

	def := oneWorkflow(`{"name": "greet", "input": {"type": "object"},
		"steps": [{"id": "hello", "set": "hello ${{ input.name }}"}]}`)
	engine, err := runner.New(store, def, nil, nil)
	if err != nil {
		panic(err)
	}
	if err := engine.Start(ctx); err != nil {
		panic(err)
	}
	defer engine.Stop(ctx)

	res, err := engine.Submit(ctx, runner.SubmitParams{Workflow: "greet", Input: json.RawMessage(`{"name": "Ada"}`)})
	if err != nil {
		panic(err)
	}
	run, err := engine.Wait(ctx, res.Run.ID, 10*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println(run.Status, string(run.Output))
	// Output: completed "hello Ada"
}
