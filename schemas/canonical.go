package schemas

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/gorunner/gorunner/internal/canonjson"
)

// Canonical returns d as canonical JSON (sorted keys, no whitespace, one spelling per
// number), so that definitions equal as JSON are equal as bytes.
func Canonical(d *Definition) ([]byte, error) {
	raw, err := Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("marshalling definition: %w", err)
	}
	out, err := canonjson.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("canonicalising definition: %w", err)
	}
	return out, nil
}

// Hash returns the hex SHA-256 of d's canonical form: a version's content address.
func Hash(d *Definition) (string, error) {
	c, err := Canonical(d)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}
