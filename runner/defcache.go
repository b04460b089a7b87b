package runner

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/gorunner/gorunner/expression"
	"github.com/gorunner/gorunner/schemas"
)

// maxCachedDefs bounds the definition cache; when full it starts over.
const maxCachedDefs = 512

// compiled is a decoded definition with its input and output schemas and its compiled
// templates, shared by every run and submission of the same definition bytes.
type compiled struct {
	def   *schemas.Definition
	input *schemas.InputSchema
	// output checks a completed run's output; nil when the definition declares none.
	output *schemas.InputSchema

	mu        sync.Mutex
	templates map[templateKey]*expression.Template

	pureOnce sync.Once
	pure     bool

	flowOnce sync.Once
	flow     *flowIndex // see flowIndex
}

// effectFree reports whether no step of c has effects under kinds (the engine's, the same
// for every run of c): a run of c can then run to its end in its admission.
func (c *compiled) effectFree(kinds kindTable) bool {
	c.pureOnce.Do(func() {
		effects := func(st schemas.Step) bool { return kinds.effects(&st) }
		c.pure = !slices.ContainsFunc(c.def.Steps, effects) && !slices.ContainsFunc(c.def.OnFailure, effects)
	})
	return c.pure
}

// templateKey names one of a definition's templates: part ("if", a step kind's name,
// "result", "start") of step (-1: of no step).
type templateKey struct {
	step int
	part string
}

// template returns the template compiled under key, compiling src() the first time.
func (c *compiled) template(key templateKey, src func() (any, error)) (*expression.Template, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.templates[key]; ok {
		return t, nil
	}
	v, err := src()
	if err != nil {
		return nil, err
	}
	t, err := expression.CompileWith(v, c.templateVars(key)...)
	if err != nil {
		return nil, err
	}
	c.templates[key] = t
	return t, nil
}

type defCache struct {
	mu   sync.Mutex
	defs map[[sha256.Size]byte]*compiled
}

func newDefCache() *defCache {
	return &defCache{defs: map[[sha256.Size]byte]*compiled{}}
}

// get decodes raw (or finds it decoded) and compiles its input and output schemas.
func (d *defCache) get(raw json.RawMessage) (*compiled, error) {
	key := sha256.Sum256(raw)
	d.mu.Lock()
	c, ok := d.defs[key]
	d.mu.Unlock()
	if ok {
		return c, nil
	}
	def, err := schemas.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("decoding definition: %w", err)
	}
	input, err := schemas.CompileInput(def.Input)
	if err != nil {
		return nil, fmt.Errorf("compiling input schema: %w", err)
	}
	c = &compiled{def: def, input: input, templates: map[templateKey]*expression.Template{}}
	if len(def.Output) > 0 {
		// An output schema is a JSON Schema like an input schema; CompileInput compiles any.
		if c.output, err = schemas.CompileInput(def.Output); err != nil {
			return nil, fmt.Errorf("compiling output schema: %w", err)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.defs) >= maxCachedDefs {
		clear(d.defs)
	}
	d.defs[key] = c
	return c, nil
}

// toJSONValue turns v into a plain JSON value (maps, slices, strings, json.Number, bools,
// nil) as the expression package and expression environments expect.
func toJSONValue(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(raw)
}

// decodeJSON decodes raw keeping numbers exact; empty means null.
func decodeJSON(raw []byte) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	d := decoders.Get().(*decoder)
	d.r.Reset(raw)
	var v any
	if err := d.dec.Decode(&v); err != nil {
		return nil, err // d is dropped: its state is the error's
	}
	if rest, _ := d.dec.Buffered().(*bytes.Reader); len(raw) <= maxPooledDecode && d.r.Len() == 0 && rest != nil && rest.Len() == 0 {
		d.r.Reset(nil)
		decoders.Put(d) // all of raw read: as new, but for its buffer
	}
	return v, nil
}

// maxPooledDecode is the largest value after which a decoder goes back to the pool: its
// buffer grows to the size of what it read and stays so, and a step's output may be
// megabytes, which every pooled decoder would then hold on to.
const maxPooledDecode = 64 << 10

// decoder is a json.Decoder (numbers as json.Number) over a reader decodeJSON points at
// each value in turn: a new Decoder allocates its buffer again for every value, a fifth of
// the bytes an admission of a run of set steps allocated.
type decoder struct {
	r   bytes.Reader
	dec *json.Decoder
}

var decoders = sync.Pool{New: func() any {
	d := &decoder{}
	d.dec = json.NewDecoder(&d.r)
	d.dec.UseNumber()
	return d
}}
