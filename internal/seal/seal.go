// Package seal encrypts and authenticates the small values GoRunner hands out or keeps
// under the data directory's secret key (connection secrets, console cookies, list
// cursors) with AES-256-GCM. A sealed value is the random 12-byte nonce followed by the
// ciphertext and its tag. Each use has a key of its own, derived from the secret key by
// purpose (Derive), and names itself in the associated data, so a value sealed for one use
// never opens as another's.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
)

// KeySize is the size of a Box's key: AES-256.
const KeySize = 32

// ErrOpen means a sealed value was not sealed by this Box with that associated data: it
// was forged, altered, cut short, or sealed under another key or for another use.
var ErrOpen = errors.New("seal: value does not open")

// Derive returns the KeySize-byte key of purpose made from secret: HMAC-SHA256 of purpose
// keyed with secret. Keys of different purposes are independent.
func Derive(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// OrRandom returns secret, or KeySize fresh random bytes when secret is nil: the secret
// of a Service given no secret key, whose sealed values then open in it alone.
func OrRandom(secret []byte) ([]byte, error) {
	if secret != nil {
		return secret, nil
	}
	secret = make([]byte, KeySize)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("seal: making a random secret key: %w", err)
	}
	return secret, nil
}

// Box seals and opens values under one key. It is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

// New returns a Box keyed with key itself, which must be KeySize bytes.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("seal: key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("seal: key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("seal: key: %w", err)
	}
	return &Box{aead: aead}, nil
}

// For returns a Box keyed with the key of purpose derived from secret (Derive).
func For(secret []byte, purpose string) (*Box, error) {
	return New(Derive(secret, purpose))
}

// Seal encrypts plain bound to ad: Open gives plain back only with the same ad.
func (b *Box) Seal(plain, ad []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	nonce := make([]byte, n, n+len(plain)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: making a nonce: %w", err)
	}
	return b.aead.Seal(nonce, nonce, plain, ad), nil
}

// Open decrypts a value made by Seal with the same ad; anything else → ErrOpen.
func (b *Box) Open(sealed, ad []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n+b.aead.Overhead() {
		return nil, ErrOpen
	}
	plain, err := b.aead.Open(nil, sealed[:n], sealed[n:], ad)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}

// SealText is Seal written as unpadded base64url, fit for a URL, a cookie or JSON.
func (b *Box) SealText(plain, ad []byte) (string, error) {
	sealed, err := b.Seal(plain, ad)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sealed), nil
}

// OpenText opens a value made by SealText with the same ad; anything else → ErrOpen.
func (b *Box) OpenText(text string, ad []byte) ([]byte, error) {
	sealed, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		return nil, ErrOpen
	}
	return b.Open(sealed, ad)
}
