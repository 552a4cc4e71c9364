package sim

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"testing"
)

// cleanPath's shortcut for names already clean gives what cleaning them
// gives, for every name of up to seven characters from "a", "/" and ".":
// the name cleaned, or a refusal (fs.ErrInvalid, as the real world's) of
// an absolute name, one naming nothing or one leaving the disk; "a..b" and
// "a/../b" are names, as the real world has them.
func TestCleanPathShortcut(t *testing.T) {
	slow := func(p string) (string, bool) {
		c := path.Clean(p)
		if p == "" || strings.HasPrefix(p, "/") || c == "." || c == ".." || strings.HasPrefix(c, "../") {
			return "", false
		}
		return c, true
	}
	var names []string
	var grow func(p string)
	grow = func(p string) {
		names = append(names, p)
		if len(p) < 7 {
			for _, r := range []string{"a", "/", "."} {
				grow(p + r)
			}
		}
	}
	grow("")
	for _, p := range names {
		got, err := cleanPath(p)
		want, ok := slow(p)
		if got != want || (err == nil) != ok || err != nil && !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("cleanPath(%q) = %q, %v; cleaning gives %q, ok %v", p, got, err, want, ok)
		}
	}
}
