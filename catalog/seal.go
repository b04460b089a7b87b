package catalog

import (
	"fmt"

	"github.com/gorunner/gorunner/internal/seal"
)

// sealer seals connection secrets (seal.Box: AES-256-GCM, the nonce before the ciphertext)
// under the secret key itself, as they always were, so the secrets stored stay readable.
// The connection ID is the associated data, so a sealed secret cannot be moved to another
// connection; no other use seals under the secret key itself (they derive keys of their
// own), so no other sealed value opens as a secret.
type sealer struct {
	box *seal.Box
}

func newSealer(key []byte) (*sealer, error) {
	box, err := seal.New(key)
	if err != nil {
		return nil, fmt.Errorf("catalog: secret key: %w", err)
	}
	return &sealer{box: box}, nil
}

func (s *sealer) seal(plain []byte, id string) ([]byte, error) {
	sealed, err := s.box.Seal(plain, []byte(id))
	if err != nil {
		return nil, fmt.Errorf("sealing secret of connection %s: %w", id, err)
	}
	return sealed, nil
}

func (s *sealer) open(sealed []byte, id string) ([]byte, error) {
	plain, err := s.box.Open(sealed, []byte(id))
	if err != nil {
		return nil, fmt.Errorf("opening secret of connection %s: %w", id, err)
	}
	return plain, nil
}
