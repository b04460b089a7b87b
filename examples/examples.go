// Package examples ships GoRunner's example workflows. They are offered as templates at
// GET /api/templates, and `gorunner serve --examples` creates and publishes them.
package examples

import (
	"embed"
	"io/fs"
)

//go:embed workflows/*.yaml
var workflows embed.FS

// Workflows returns the example definitions, one file each at the root of the FS.
func Workflows() fs.FS {
	sub, err := fs.Sub(workflows, "workflows")
	if err != nil {
		panic(err) // the embedded folder is fixed at build time
	}
	return sub
}
