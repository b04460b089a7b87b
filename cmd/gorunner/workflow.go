package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gorunner/gorunner/client"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/schemas"
	"github.com/gorunner/gorunner/wire"
)

// publishedVersion is what `workflow publish` prints of the API's version: all but the
// definition, which `workflow get` shows.
type publishedVersion struct {
	WorkflowID  string    `json:"workflowId"`
	Version     int       `json:"version"`
	Hash        string    `json:"hash"`
	PublishedAt time.Time `json:"publishedAt"`
}

func publishedVersionOf(v wire.Version) publishedVersion {
	return publishedVersion{WorkflowID: v.WorkflowID, Version: v.Version, Hash: v.Hash, PublishedAt: v.PublishedAt}
}

func newWorkflowCommand(o *clientOpts) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "workflow",
		Aliases: []string{"workflows", "wf"},
		Short:   "Apply, list, show, publish and delete workflows on a running server",
		Example: "  gorunner workflow apply workflows/*.yaml\n  gorunner workflow list",
	}
	cmd.AddCommand(newApplyCommand(o), &cobra.Command{
		Use:     "list",
		Short:   "List workflows",
		Example: "  gorunner workflow list\n  gorunner workflow list -o json | jq -r '.[].name'",
		Args:    cobra.NoArgs,
		RunE:    o.listWorkflows,
	}, &cobra.Command{
		Use:               "get NAME",
		Short:             "Show a workflow with its draft definition, as JSON",
		Example:           "  gorunner workflow get hello",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeWorkflows,
		RunE:              o.getWorkflow,
	}, &cobra.Command{
		Use:               "publish NAME",
		Short:             "Publish a workflow's draft as a new version (nothing new when it is unchanged)",
		Example:           "  gorunner workflow publish hello",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeWorkflows,
		RunE:              o.publishWorkflow,
	}, &cobra.Command{
		Use:               "delete NAME",
		Short:             "Delete a workflow; its tool disappears and its active runs finish",
		Example:           "  gorunner workflow delete hello",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeWorkflows,
		RunE:              o.deleteWorkflow,
	})
	return o.addTo(cmd)
}

func workflowPath(name string) string { return "/api/workflows/" + url.PathEscape(name) }

// workflows lists every workflow, following the pages.
func workflows(ctx context.Context, c *client.Client) ([]wire.Workflow, error) {
	var all []wire.Workflow
	q := url.Values{"limit": {strconv.Itoa(limits.MaxPage)}}
	for {
		var page []wire.Workflow
		_, env, err := c.Call(ctx, client.Request{Method: "GET", Path: "/api/workflows", Query: q}, &page)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if env.NextCursor == "" {
			return all, nil
		}
		q.Set("cursor", env.NextCursor)
	}
}

func (o *clientOpts) listWorkflows(cmd *cobra.Command, _ []string) error {
	c, p, err := o.clientAndPrinter(cmd)
	if err != nil {
		return err
	}
	list, err := workflows(cmd.Context(), c)
	if err != nil {
		return err
	}
	if list == nil {
		list = []wire.Workflow{}
	}
	return p.either(list, func() error {
		rows := make([][]string, len(list))
		for i, w := range list {
			version := "-"
			if w.LatestVersion != nil {
				version = strconv.Itoa(*w.LatestVersion)
			}
			rows[i] = []string{w.Name, version, strconv.FormatBool(w.Published), strconv.Itoa(w.Rev), w.Title}
		}
		return p.table([]string{"NAME", "VERSION", "PUBLISHED", "REV", "TITLE"}, rows)
	})
}

func (o *clientOpts) getWorkflow(cmd *cobra.Command, args []string) error {
	c, p, err := o.clientAndPrinter(cmd)
	if err != nil {
		return err
	}
	var w wire.Workflow
	if _, _, err := c.Call(cmd.Context(), client.Request{Method: "GET", Path: workflowPath(args[0])}, &w); err != nil {
		return err
	}
	return p.JSON(w)
}

// publish publishes a workflow's draft and says whether that made a new version.
func publish(ctx context.Context, c *client.Client, name string) (wire.Version, bool, error) {
	var v wire.Version
	status, _, err := c.Call(ctx, client.Request{Method: "POST", Path: workflowPath(name) + "/publish"}, &v)
	return v, status == http.StatusCreated, err
}

func (o *clientOpts) publishWorkflow(cmd *cobra.Command, args []string) error {
	c, p, err := o.clientAndPrinter(cmd)
	if err != nil {
		return err
	}
	v, created, err := publish(cmd.Context(), c, args[0])
	if err != nil {
		return err
	}
	return p.either(publishedVersionOf(v), func() error {
		if !created {
			return p.line("%s: unchanged since version %d", args[0], v.Version)
		}
		return p.line("%s: published version %d", args[0], v.Version)
	})
}

func (o *clientOpts) deleteWorkflow(cmd *cobra.Command, args []string) error {
	c, p, err := o.clientAndPrinter(cmd)
	if err != nil {
		return err
	}
	if _, _, err := c.Call(cmd.Context(), client.Request{Method: "DELETE", Path: workflowPath(args[0])}, nil); err != nil {
		return err
	}
	return p.either(map[string]string{"deleted": args[0]}, func() error { return p.line("%s: deleted", args[0]) })
}

// completeWorkflows completes a workflow name from the server's list, quietly giving none
// when the server cannot be asked.
func (o *clientOpts) completeWorkflows(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if err := applyEnv(cmd.Flags()); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := o.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	list, err := workflows(cmd.Context(), c)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, len(list))
	for i, w := range list {
		names[i] = w.Name + "\t" + w.Title
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// applied is what `workflow apply` did with one file.
type applied struct {
	File    string `json:"file"`
	Name    string `json:"name"`
	Action  string `json:"action"` // created, updated or unchanged
	Version int    `json:"version"`
	// Published is true when this apply published a new version.
	Published bool `json:"published"`
}

func newApplyCommand(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "apply FILE...",
		Short: "Create or update workflows from files (YAML or JSON) by name, then publish them",
		Long: "Create each file's workflow, or replace its draft when the definition differs, then publish it.\n" +
			"A file whose definition is already the published one changes nothing: no new draft, no new version.",
		Example: "  gorunner workflow apply hello.yaml\n  gorunner workflow apply workflows/*.yaml -o json",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			c, p, err := o.clientAndPrinter(cmd)
			if err != nil {
				return err
			}
			docs, err := readDefinitions(files)
			if err != nil {
				return err
			}
			results := make([]applied, 0, len(docs))
			for _, d := range docs {
				res, err := apply(cmd.Context(), c, d)
				if err != nil {
					return fmt.Errorf("%s: %w", d.file, err)
				}
				results = append(results, res)
				if !p.json {
					if err := p.line("%s", res.describe()); err != nil {
						return err
					}
				}
			}
			if p.json {
				return p.JSON(results)
			}
			return nil
		},
	}
}

func (a applied) describe() string {
	if a.Published {
		return fmt.Sprintf("%s: %s, published version %d", a.Name, a.Action, a.Version)
	}
	return fmt.Sprintf("%s: %s, version %d is current", a.Name, a.Action, a.Version)
}

// definitionFile is one file to apply, decoded and in canonical form.
type definitionFile struct {
	file  string
	name  string
	canon []byte
}

// readDefinitions reads and decodes every file before anything is applied, so that a typo
// in the last file changes nothing. A missing file is a usage error.
func readDefinitions(files []string) ([]definitionFile, error) {
	out := make([]definitionFile, len(files))
	for i, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, usageError(fmt.Errorf("cannot read %s: %w", f, unwrapPathError(err)))
		}
		canon, name, err := canonicalDefinition(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out[i] = definitionFile{file: f, name: name, canon: canon}
	}
	return out, nil
}

// canonicalDefinition decodes a JSON or YAML definition into its canonical JSON.
func canonicalDefinition(raw []byte) ([]byte, string, error) {
	def, err := schemas.Decode(raw)
	if err != nil {
		return nil, "", err
	}
	if strings.TrimSpace(def.Name) == "" {
		return nil, "", fmt.Errorf("the definition has no name")
	}
	canon, err := schemas.Canonical(def)
	return canon, def.Name, err
}

// apply creates d's workflow, or replaces its draft when it differs, then publishes it.
func apply(ctx context.Context, c *client.Client, d definitionFile) (applied, error) {
	res := applied{File: d.file, Name: d.name}
	_, current, err := c.Send(ctx, client.Request{Method: "GET", Path: workflowPath(d.name) + "/export"})
	switch {
	case client.IsStatus(err, http.StatusNotFound):
		res.Action = "created"
		_, _, err = c.Call(ctx, client.Request{Method: "POST", Path: "/api/workflows", Body: d.canon}, nil)
	case err != nil:
	default:
		res.Action, err = updateIfChanged(ctx, c, d, current)
	}
	if err != nil {
		return res, err
	}
	v, created, err := publish(ctx, c, d.name)
	res.Version, res.Published = v.Version, created
	return res, err
}

// updateIfChanged replaces the draft with d unless their canonical forms are equal.
func updateIfChanged(ctx context.Context, c *client.Client, d definitionFile, current []byte) (string, error) {
	canon, _, err := canonicalDefinition(current)
	if err != nil {
		return "", fmt.Errorf("reading the current draft: %w", err)
	}
	if bytes.Equal(canon, d.canon) {
		return "unchanged", nil
	}
	_, _, err = c.Call(ctx, client.Request{Method: "PUT", Path: workflowPath(d.name), Body: d.canon}, nil)
	return "updated", err
}
