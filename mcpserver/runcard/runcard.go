// Package runcard holds the run card, GoRunner's MCP App (SPEC §5, MCP Apps): one
// self-contained HTML file that hosts rendering the io.modelcontextprotocol/ui extension
// show a workflow tool's result in. It loads nothing: its script (the card and the
// @modelcontextprotocol/ext-apps library it speaks the protocol through) and its styles are
// inline, bundled at build time from web/ by `go generate ./mcpserver/runcard/`, and the
// result, run.html, is committed.
package runcard

import _ "embed"

//go:generate node web/build.mjs

// HTML is the card.
//
//go:embed run.html
var HTML string
