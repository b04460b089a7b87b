package schemas

import "encoding/json"

// TagsOf reads the tags of a stored definition (canonical JSON) without decoding the rest;
// a definition that does not parse has none.
func TagsOf(definition json.RawMessage) []string {
	var d struct {
		Tags []string `json:"tags"`
	}
	_ = json.Unmarshal(definition, &d)
	return d.Tags
}
