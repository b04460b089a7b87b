package catalog

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// sealer encrypts connection secrets with AES-256-GCM; the nonce is stored before the
// ciphertext. The connection ID is the additional data, so a sealed secret cannot be moved
// to another connection.
type sealer struct {
	aead cipher.AEAD
}

func newSealer(key []byte) (*sealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("catalog: secret key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("catalog: secret key: %w", err)
	}
	return &sealer{aead: aead}, nil
}

func (s *sealer) seal(plain []byte, id string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("sealing secret: %w", err)
	}
	return s.aead.Seal(nonce, nonce, plain, []byte(id)), nil
}

func (s *sealer) open(sealed []byte, id string) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("opening secret: sealed value too short")
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(id))
	if err != nil {
		return nil, fmt.Errorf("opening secret of connection %s: %w", id, err)
	}
	return plain, nil
}
