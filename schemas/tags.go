package schemas

import (
	"encoding/json"
	"slices"
	"strconv"
)

// MaxTags bounds how many tags a definition carries.
const MaxTags = 20

// tags reports tags past MaxTags, not matching NamePattern, or repeated.
func (v *validator) tags(tags []string) {
	if len(tags) > MaxTags {
		v.add("/tags", "at most %d tags, got %d", MaxTags, len(tags))
	}
	for i, t := range tags {
		path := "/tags/" + strconv.Itoa(i)
		switch {
		case !nameRE.MatchString(t):
			v.add(path, "tag %q must match %s", t, NamePattern)
		case slices.Contains(tags[:i], t):
			v.add(path, "tag %q is repeated", t)
		}
	}
}

// TagsOf reads the tags of a stored definition (canonical JSON) without decoding the rest;
// a definition that does not parse has none.
func TagsOf(definition json.RawMessage) []string {
	var d struct {
		Tags []string `json:"tags"`
	}
	_ = json.Unmarshal(definition, &d)
	return d.Tags
}
