package storecopy

import (
	"fmt"
	"strconv"
	"strings"
)

// What follows is shared by the SQL backends (SQLite, PostgreSQL), whose tables are the
// kinds: the statements, spelled once, and the conversion of a value to a column's type.

// Type is what a column holds, as far as a copy needs to know.
type Type int

// The column types.
const (
	Int Type = iota
	Bool
	Text
	Bytes
)

// String names t, for errors.
func (t Type) String() string {
	if names := []string{"integer", "boolean", "text", "bytes"}; t >= 0 && int(t) < len(names) {
		return names[t]
	}
	return "unknown"
}

// Column is one column of a backend's table.
type Column struct {
	Name string
	Type Type
	// Required: the column refuses NULL, so a record without the value leaves it out and
	// the column takes its default.
	Required bool
}

// TableOf finds kind's table; an unknown kind is an error.
func TableOf(kind Kind) (Table, error) {
	for _, t := range Tables {
		if t.Kind == kind {
			return t, nil
		}
	}
	return Table{}, fmt.Errorf("unknown kind of record %q", kind)
}

// Select is the statement that reads cols of every record of t in key order.
func (t Table) Select(cols []string) string {
	return "SELECT " + quoteAll(cols) + " FROM " + quote(string(t.Kind)) + " ORDER BY " + quoteAll(t.Key)
}

// Count is the statement that counts t's records.
func (t Table) Count() string { return "SELECT count(*) FROM " + quote(string(t.Kind)) }

// Insert is the statement that writes one record of t with cols, the parameters spelled
// by param (1-based). A seeded record (a counter) is overwritten.
func (t Table) Insert(cols []string, param func(int) string) string {
	ps := make([]string, len(cols))
	for i := range cols {
		ps[i] = param(i + 1)
	}
	q := "INSERT INTO " + quote(string(t.Kind)) + " (" + quoteAll(cols) + ") VALUES (" + strings.Join(ps, ", ") + ")"
	if t.Seeded {
		q += " ON CONFLICT (" + quoteAll(t.Key) + ") DO UPDATE SET " + updateAll(cols)
	}
	return q
}

// Row turns r into the columns and arguments of its insert into a table of cols: a field
// the table lacks is an error (a copy never drops what it cannot place), a nil value of a
// required column is left out.
func Row(r Record, cols map[string]Column) (names []string, args []any, err error) {
	for name, v := range r.Fields {
		c, ok := cols[name]
		if !ok {
			return nil, nil, fmt.Errorf("%s: the target has no field %q", r.Kind, name)
		}
		if v == nil && c.Required {
			continue
		}
		arg, err := Convert(v, c.Type)
		if err != nil {
			return nil, nil, fmt.Errorf("%s.%s: %w", r.Kind, name, err)
		}
		names, args = append(names, name), append(args, arg)
	}
	return names, args, nil
}

// Convert turns an exported value into one of type t: text and bytes into each other,
// decimal text into integers, 0 and 1 into booleans. nil stays nil.
func Convert(v any, t Type) (any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case int64:
		switch t {
		case Int:
			return v, nil
		case Bool:
			return v != 0, nil
		}
	case string:
		switch t {
		case Text:
			return v, nil
		case Bytes:
			return []byte(v), nil
		case Int, Bool:
			// Redis keeps numbers, times and booleans as decimal text.
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%q is no integer: %w", v, err)
			}
			return Convert(n, t)
		}
	case []byte:
		switch t {
		case Text:
			return string(v), nil
		case Bytes:
			return v, nil
		}
	}
	return nil, fmt.Errorf("a %T cannot be stored in a column of type %s", v, t)
}

// Value turns a value a driver read into an exported one: integers into int64, booleans
// into 0 or 1; text, bytes and nil as they are.
func Value(v any) (any, error) {
	switch v := v.(type) {
	case nil, int64, string, []byte:
		return v, nil
	case int32:
		return int64(v), nil
	case int16:
		return int64(v), nil
	case bool:
		if v {
			return int64(1), nil
		}
		return int64(0), nil
	}
	return nil, fmt.Errorf("a value of type %T cannot be copied", v)
}

func quote(name string) string { return `"` + name + `"` }

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(n)
	}
	return strings.Join(q, ", ")
}

// updateAll sets every one of cols to the value the insert tried.
func updateAll(cols []string) string {
	set := make([]string, len(cols))
	for i, c := range cols {
		set[i] = quote(c) + " = excluded." + quote(c)
	}
	return strings.Join(set, ", ")
}
