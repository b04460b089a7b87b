package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/gorunner/gorunner/idempotency"
	"github.com/gorunner/gorunner/internal/limits"
	"github.com/gorunner/gorunner/problem"
)

// openapi serves the OpenAPI 3.1 document built from the route table.
func (s *Server) openapi(w http.ResponseWriter, _ *http.Request) {
	doc, err := s.openapiDoc()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, ErrorBody{Error: ErrorObject{Code: problem.CodeInternal, Message: "building the OpenAPI document failed"}})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(doc)
}

// openapiDoc builds the document once per server.
func (s *Server) openapiDoc() ([]byte, error) {
	s.openapiOnce.Do(func() { s.openapiBytes, s.openapiErr = buildOpenAPI(s.table()) })
	return s.openapiBytes, s.openapiErr
}

// specBuilder collects component schemas while operations are described.
type specBuilder struct {
	reflector  *jsonschema.Reflector
	components map[string]any
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

func buildOpenAPI(routes []route) ([]byte, error) {
	b := &specBuilder{
		reflector:  &jsonschema.Reflector{AllowAdditionalProperties: true, Namer: func(t reflect.Type) string { return componentName(t.Name()) }},
		components: map[string]any{},
	}
	b.components["Error"] = b.schemaOf(ErrorBody{})
	paths := map[string]map[string]any{}
	for _, rt := range routes {
		if paths[rt.pattern] == nil {
			paths[rt.pattern] = map[string]any{}
		}
		paths[rt.pattern][strings.ToLower(rt.method)] = b.operation(rt)
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "GoRunner API",
			"version":     "1",
			"description": "Durable workflows, exposed as MCP tools. Every call needs Authorization: Bearer gr_… unless marked otherwise. Errors use the envelope {\"error\": {code, message, details}}.",
		},
		"paths": paths,
		"components": map[string]any{
			"schemas": b.components,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer"},
			},
		},
		"security": []any{map[string]any{"bearer": []any{}}},
	}
	return json.MarshalIndent(doc, "", "  ")
}

func componentName(goName string) string {
	name := strings.TrimSuffix(strings.TrimSuffix(goName, "View"), "Body")
	if name == "" {
		return goName
	}
	return strings.ToUpper(name[:1]) + name[1:]
}

// schemaOf reflects v, files its definitions under components and returns its schema
// with references rewritten to #/components/schemas/….
func (b *specBuilder) schemaOf(v any) any {
	s := b.reflector.Reflect(v)
	defs := s.Definitions
	s.Definitions = nil
	s.Version = ""
	for name, d := range defs {
		b.components[name] = rewriteRefs(d)
	}
	return rewriteRefs(s)
}

func rewriteRefs(s *jsonschema.Schema) any {
	raw, _ := json.Marshal(s)
	raw = []byte(strings.ReplaceAll(string(raw), `"#/$defs/`, `"#/components/schemas/`))
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}

func (b *specBuilder) operation(rt route) map[string]any {
	op := map[string]any{"operationId": rt.id, "summary": rt.summary}
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(rt.pattern, -1) {
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
	}
	if rt.keyed != notKeyed {
		params = append(params, map[string]any{
			"name": "Idempotency-Key", "in": "header", "required": false,
			"description": fmt.Sprintf("1–%d characters. A retry with the same key and request replays the first answer (header Idempotency-Replayed: true).", idempotency.MaxKeyLength),
			"schema":      map[string]any{"type": "string", "minLength": 1, "maxLength": idempotency.MaxKeyLength},
		})
	}
	if rt.list && rt.method == http.MethodGet {
		params = append(params, map[string]any{
			"name": "limit", "in": "query", "required": false,
			"description": fmt.Sprintf("Items a page holds at most (default %d); another value is 400 VALIDATION_ERROR at /limit.", limits.DefaultPage),
			"schema":      map[string]any{"type": "integer", "minimum": 1, "maximum": limits.MaxPage},
		}, map[string]any{
			"name": "cursor", "in": "query", "required": false,
			"description": "The nextCursor of the page before; one not given out is 400 VALIDATION_ERROR (invalid cursor).",
			"schema":      map[string]any{"type": "string"},
		})
	}
	for _, q := range rt.query {
		schema := map[string]any{"type": "string"}
		if q.enum != nil {
			schema["enum"] = q.enum
		}
		params = append(params, map[string]any{"name": q.name, "in": "query", "required": false, "description": q.description, "schema": schema})
	}
	if params != nil {
		op["parameters"] = params
	}
	if rt.public {
		op["security"] = []any{}
	} else {
		op["description"] = "Needs: " + rt.access.String() + ". Beyond the token's scopes: 403 FORBIDDEN naming the missing scope."
		op["x-gorunner-scope"] = rt.access.String()
	}
	if rt.body != nil {
		op["requestBody"] = map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": b.schemaOf(rt.body)}}}
	}
	responses := map[string]any{"default": map[string]any{
		"description": "An error in the envelope",
		"content":     map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}},
	}}
	ok := map[string]any{"description": http.StatusText(rt.status)}
	if rt.data != nil {
		data := b.schemaOf(rt.data)
		if rt.list {
			data = map[string]any{"type": "array", "items": data}
		}
		props := map[string]any{"data": data}
		if rt.list {
			props["nextCursor"] = map[string]any{"type": "string", "description": fmt.Sprintf("Where the next page "+
				"begins: pass it as ?cursor=. A page may hold fewer items than its limit, even none, and still carry "+
				"one (a run list examines at most %d runs a page); only the last page has none.", limits.MaxRunsExamined)}
		}
		ok["content"] = map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object", "properties": props, "required": []string{"data"}}}}
	}
	responses[strconv.Itoa(rt.status)] = ok
	op["responses"] = responses
	return op
}
