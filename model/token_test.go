package model

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTokenAccepted(t *testing.T) {
	key := []byte("k")
	tok := IssueToken(key, BlockToken{BlockID: 7, GenStamp: 1001, Modes: ModeRead | ModeWrite, Expiry: time.Minute})
	if len(tok) != TokenLen {
		t.Fatalf("token of %d bytes, want %d", len(tok), TokenLen)
	}
	for _, m := range []AccessMode{ModeRead, ModeWrite, ModeRead | ModeWrite} {
		if err := CheckToken(key, tok, 7, 1001, m, time.Minute-1); err != nil {
			t.Errorf("mode %v refused: %v", m, err)
		}
	}
}

func TestTokenRefused(t *testing.T) {
	key := []byte("k")
	good := BlockToken{BlockID: 7, GenStamp: 1001, Modes: ModeRead, Expiry: time.Minute}
	tok := IssueToken(key, good)
	flipped := bytes.Clone(tok)
	flipped[TokenLen-1] ^= 1
	cases := []struct {
		name  string
		key   []byte
		tok   []byte
		block uint64
		stamp uint64
		mode  AccessMode
		now   time.Duration
		want  string
	}{
		{"missing", key, nil, 7, 1001, ModeRead, 0, "no token"},
		{"short", key, tok[:TokenLen-1], 7, 1001, ModeRead, 0, "bytes"},
		{"long", key, append(bytes.Clone(tok), 0), 7, 1001, ModeRead, 0, "bytes"},
		{"forged", []byte("other"), tok, 7, 1001, ModeRead, 0, "signature"},
		{"bit flipped", key, flipped, 7, 1001, ModeRead, 0, "signature"},
		{"expired", key, tok, 7, 1001, ModeRead, time.Minute, "expired"},
		{"wrong block", key, tok, 8, 1001, ModeRead, 0, "used for block 8"},
		{"wrong stamp", key, tok, 7, 1002, ModeRead, 0, "used for block 7 stamp 1002"},
		{"wrong mode", key, tok, 7, 1001, ModeDelete, 0, "not DELETE"},
		{"no mode", key, tok, 7, 1001, 0, 0, "not none"},
	}
	for _, c := range cases {
		err := CheckToken(c.key, c.tok, c.block, c.stamp, c.mode, c.now)
		if !errors.Is(err, ErrAccessToken) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrAccessToken mentioning %q", c.name, err, c.want)
		}
		if StatusOf(err) != StatusErrorAccessToken {
			t.Errorf("%s: status %v", c.name, StatusOf(err))
		}
	}
}

func TestModeForEveryOp(t *testing.T) {
	for _, op := range []Op{OpReadBlock, OpWriteBlock, OpAppendBlock, OpReplaceBlock, OpDeleteBlock, OpRequestShortCircuitFDs} {
		if ModeFor(op) == 0 {
			t.Errorf("%v needs no access mode", op)
		}
	}
	if ModeFor(OpReadBlock) == ModeFor(OpDeleteBlock) {
		t.Error("a read token would allow deletes")
	}
}

// Whatever the bytes, DecodeToken either refuses them with ErrAccessToken
// or returns a grant that re-issues to the same fields, and CheckToken
// never accepts a token not signed with the key.
func FuzzDecodeToken(f *testing.F) {
	key := []byte("fuzz key")
	f.Add(IssueToken(key, BlockToken{BlockID: 1, GenStamp: 2, Modes: ModeRead, Expiry: time.Hour}))
	f.Add(IssueToken([]byte("other"), BlockToken{BlockID: 1, Modes: modeAll, Expiry: time.Hour}))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, TokenLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		tk, mac, err := DecodeToken(b)
		if err != nil {
			if !errors.Is(err, ErrAccessToken) {
				t.Fatalf("error %v does not wrap ErrAccessToken", err)
			}
			return
		}
		signed := IssueToken(key, tk)
		if !bytes.Equal(signed[:TokenLen-len(mac)], b[:TokenLen-len(mac)]) {
			t.Fatalf("fields %+v re-encode differently", tk)
		}
		err = CheckToken(key, b, tk.BlockID, tk.GenStamp, tk.Modes, tk.Expiry-1)
		if bytes.Equal(signed, b) != (err == nil) && tk.Modes != 0 && tk.Expiry > 0 {
			t.Fatalf("signed correctly: %v, check: %v", bytes.Equal(signed, b), err)
		}
	})
}

// One TokenMAC used over and over, across keys, issues and judges exactly
// as a fresh HMAC per token does.
func TestTokenMACReused(t *testing.T) {
	var m TokenMAC
	keys := [][]byte{[]byte("k"), []byte("other"), []byte("k"), nil, []byte("k2")}
	for i := range 50 {
		key := keys[i%len(keys)]
		bt := BlockToken{BlockID: uint64(i), GenStamp: uint64(1000 + i), Modes: AccessMode(i%15 + 1), Expiry: time.Duration(i) * time.Second}
		tok := m.Issue(key, bt)
		if want := IssueToken(key, bt); !bytes.Equal(tok, want) {
			t.Fatalf("token %d: % x, want % x", i, tok, want)
		}
		other := keys[(i+1)%len(keys)]
		for _, k := range [][]byte{key, other} {
			got, want := m.Check(k, tok, bt.BlockID, bt.GenStamp, ModeRead, 0), CheckToken(k, tok, bt.BlockID, bt.GenStamp, ModeRead, 0)
			if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
				t.Fatalf("token %d under key %q: %v, want %v", i, k, got, want)
			}
		}
	}
}

// BenchmarkTokenCheck compares a datanode's token check with a new HMAC
// per token (CheckToken) and with its loop's TokenMAC.
func BenchmarkTokenCheck(b *testing.B) {
	key := []byte("xceiver block pool key 1")
	tok := IssueToken(key, BlockToken{BlockID: 7, GenStamp: 1001, Modes: ModeRead, Expiry: time.Minute})
	b.Run("new-hmac", func(b *testing.B) {
		for b.Loop() {
			if err := CheckToken(key, tok, 7, 1001, ModeRead, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reused", func(b *testing.B) {
		var m TokenMAC
		for b.Loop() {
			if err := m.Check(key, tok, 7, 1001, ModeRead, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A TokenMAC for the default key starts from a clone of one keyed once
// (defaultKeyed); its MACs are still HMAC-SHA256 under the key given,
// also when a caller has changed DefaultTokenKey since.
func TestTokenMACDefaultKeyClone(t *testing.T) {
	bt := BlockToken{BlockID: 9, GenStamp: 1002, Modes: ModeRead, Expiry: time.Minute}
	check := func(key []byte) {
		t.Helper()
		tok := IssueToken(key, bt)
		m := hmac.New(sha256.New, key)
		m.Write(tok[:TokenLen-sha256.Size])
		if want := m.Sum(nil); !bytes.Equal(tok[TokenLen-sha256.Size:], want) {
			t.Fatalf("key %q: MAC % x, want % x", key, tok[TokenLen-sha256.Size:], want)
		}
		var tm TokenMAC
		if err := tm.Check(key, tok, bt.BlockID, bt.GenStamp, ModeRead, 0); err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
	}
	check(DefaultTokenKey)
	check([]byte("another key"))
	old := DefaultTokenKey
	defer func() { DefaultTokenKey = old }()
	DefaultTokenKey = []byte("a key changed at run time")
	check(DefaultTokenKey)
}
