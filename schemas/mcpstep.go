package schemas

import "net/url"

// KindMCP is the step kind that calls one tool of another MCP server (SPEC §2).
const KindMCP = "mcp"

// MCPStep calls one tool of another MCP server over streamable HTTP. Arguments may hold
// expressions; Connection names the credentials sent, as for http steps (bound to their
// hosts).
type MCPStep struct {
	URL        string         `json:"url"`
	Tool       string         `json:"tool" jsonschema:"minLength=1"`
	Arguments  map[string]any `json:"arguments,omitempty"`
	Connection string         `json:"connection,omitempty"`
}

func (v *validator) mcp(p string, m *MCPStep, i int) {
	if t := v.required(p+"/url", m.URL, i); t != nil && t.Static() {
		if u, err := url.Parse(m.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add(p+"/url", "url %q must be an absolute http or https URL (the server's streamable HTTP endpoint)", m.URL)
		}
	}
	v.required(p+"/tool", m.Tool, i)
	for k, val := range m.Arguments {
		v.template(p+"/arguments/"+escapePointer(k), val, i)
	}
}
