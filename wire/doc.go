// Package wire holds the JSON views of the engine's and the catalog's records: the objects
// the REST API answers with, the console shows, the MCP run resource carries and the CLI
// decodes. Records (runner.Run, catalog.Workflow, …) are what the engine and the stores
// keep; a view is what a client sees of one, built by a constructor, so that an engine
// field never reaches the wire by accident and the wire does not change when a record does.
package wire
