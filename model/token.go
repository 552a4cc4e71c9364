package model

// Block access tokens, as HDFS's BlockTokenSecretManager issues them: the
// namenode signs (block, stamp, modes, expiry) with a key it shares with
// its datanodes, the client carries the token in every request, and the
// datanode recomputes the MAC before it touches the block. Here the client
// mints its own tokens from the shared key (it plays the namenode's part),
// so a test can hand it, or a raw peer, a key or a token of its choosing.
//
// Wire layout (the Request's token field):
//
//	blockID  uint64
//	genStamp uint64  0: any stamp (as in a request)
//	modes    uint8   AccessMode bits
//	expiry   int64   world time (ns) after which the token is refused
//	mac      [32]byte HMAC-SHA256 of the fields above under the key

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"
)

// AccessMode is a set of operations a token grants (HDFS's
// BlockTokenIdentifier.AccessMode).
type AccessMode uint8

const (
	ModeRead    AccessMode = 1 << iota // read, short-circuit fds
	ModeWrite                          // write, append
	ModeReplace                        // replace
	ModeDelete                         // delete
	modeAll     = ModeRead | ModeWrite | ModeReplace | ModeDelete
)

func (m AccessMode) String() string {
	if m == 0 {
		return "none"
	}
	var names []string
	for i, n := range []string{"READ", "WRITE", "REPLACE", "DELETE"} {
		if m&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if m&^modeAll != 0 {
		names = append(names, fmt.Sprintf("%#x", uint8(m&^modeAll)))
	}
	return strings.Join(names, "|")
}

// ModeFor is the access an op needs.
func ModeFor(op Op) AccessMode {
	switch op {
	case OpReadBlock, OpRequestShortCircuitFDs:
		return ModeRead
	case OpWriteBlock, OpAppendBlock:
		return ModeWrite
	case OpReplaceBlock:
		return ModeReplace
	case OpDeleteBlock:
		return ModeDelete
	}
	return 0
}

// TokenLen is the size of an encoded token.
const TokenLen = 8 + 8 + 1 + 8 + sha256.Size

// DefaultTokenKey is the key datanodes and clients share when their
// configurations name none: the testbed's one block pool.
var DefaultTokenKey = []byte("xceiver block pool key 1")

// DefaultTokenLifetime is how long a client's tokens last (HDFS's
// dfs.block.access.token.lifetime, 600 min).
const DefaultTokenLifetime = 10 * time.Hour

// BlockToken is what a token grants.
type BlockToken struct {
	BlockID  uint64
	GenStamp uint64 // 0: any stamp
	Modes    AccessMode
	Expiry   time.Duration // world time
}

// ErrAccessToken means a request's token is missing, malformed, forged,
// expired or for another block, stamp or mode. Servers answer it with
// StatusErrorAccessToken before touching the block.
var ErrAccessToken = errors.New("block access token rejected")

// IssueToken encodes t and signs it with key.
func IssueToken(key []byte, t BlockToken) []byte {
	var m TokenMAC
	return m.Issue(key, t)
}

// TokenMAC issues and checks tokens, keeping the keyed HMAC from one token
// to the next, as Hadoop's SecretManager keeps a Mac per thread: a new
// HMAC per token hashes the key's two pads again (half the SHA-256 blocks
// of a token) and allocates them. The zero value is ready; one per loop,
// since it is not safe for concurrent use.
type TokenMAC struct {
	key []byte
	m   hash.Hash
	sum [sha256.Size]byte
}

// defaultKeyed is an HMAC keyed with DefaultTokenKey (with a copy of it,
// so a caller changing the variable cannot make it lie) and never written
// to: a TokenMAC for that key starts as a clone of it. Many TokenMACs are
// short-lived (a threaded datanode's, one per connection; IssueToken's and
// CheckToken's, one per token) and nearly all use the default key; keying
// each afresh hashed the key's two pads and allocated them every time.
// Cloning only reads it, so concurrent use is safe.
var (
	defaultKey   = bytes.Clone(DefaultTokenKey)
	defaultKeyed = keyedHMAC(defaultKey)
)

func keyedHMAC(key []byte) hash.Hash { return hmac.New(sha256.New, key) }

// mac is the HMAC-SHA256 of msg under key.
func (t *TokenMAC) mac(key, msg []byte) []byte {
	if t.m == nil || !bytes.Equal(key, t.key) {
		t.key = bytes.Clone(key)
		t.m = nil
		if bytes.Equal(key, defaultKey) {
			if c, err := defaultKeyed.(hash.Cloner).Clone(); err == nil {
				t.m = c.(hash.Hash)
			}
		}
		if t.m == nil {
			t.m = keyedHMAC(t.key)
		}
	} else {
		t.m.Reset()
	}
	t.m.Write(msg)
	return t.m.Sum(t.sum[:0])
}

// Issue is IssueToken.
func (t *TokenMAC) Issue(key []byte, bt BlockToken) []byte {
	b := make([]byte, 0, TokenLen)
	b = binary.BigEndian.AppendUint64(b, bt.BlockID)
	b = binary.BigEndian.AppendUint64(b, bt.GenStamp)
	b = append(b, byte(bt.Modes))
	b = binary.BigEndian.AppendUint64(b, uint64(bt.Expiry))
	return append(b, t.mac(key, b)...)
}

// DecodeToken splits an encoded token into what it grants and its MAC,
// without checking the MAC.
func DecodeToken(b []byte) (BlockToken, []byte, error) {
	if len(b) != TokenLen {
		return BlockToken{}, nil, fmt.Errorf("token of %d bytes, want %d: %w", len(b), TokenLen, ErrAccessToken)
	}
	t := BlockToken{
		BlockID:  binary.BigEndian.Uint64(b),
		GenStamp: binary.BigEndian.Uint64(b[8:]),
		Modes:    AccessMode(b[16]),
		Expiry:   time.Duration(binary.BigEndian.Uint64(b[17:])),
	}
	return t, b[25:], nil
}

// CheckToken verifies that tok, signed with key, grants mode on (block,
// stamp) at world time now. Every refusal wraps ErrAccessToken.
func CheckToken(key, tok []byte, block, stamp uint64, mode AccessMode, now time.Duration) error {
	var m TokenMAC
	return m.Check(key, tok, block, stamp, mode, now)
}

// Check is CheckToken.
func (m *TokenMAC) Check(key, tok []byte, block, stamp uint64, mode AccessMode, now time.Duration) error {
	if len(tok) == 0 {
		return fmt.Errorf("no token for block %d: %w", block, ErrAccessToken)
	}
	t, mac, err := DecodeToken(tok)
	if err != nil {
		return err
	}
	switch {
	case !hmac.Equal(mac, m.mac(key, tok[:TokenLen-sha256.Size])):
		return fmt.Errorf("token for block %d has a bad signature: %w", t.BlockID, ErrAccessToken)
	case t.Expiry <= now:
		return fmt.Errorf("token for block %d expired at %v (now %v): %w", t.BlockID, t.Expiry, now, ErrAccessToken)
	case t.BlockID != block || t.GenStamp != stamp:
		return fmt.Errorf("token for block %d stamp %d used for block %d stamp %d: %w", t.BlockID, t.GenStamp, block, stamp, ErrAccessToken)
	case t.Modes&mode != mode || mode == 0:
		return fmt.Errorf("token grants %v on block %d, not %v: %w", t.Modes, block, mode, ErrAccessToken)
	}
	return nil
}
