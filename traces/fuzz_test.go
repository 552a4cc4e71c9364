package traces

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzRead: any bytes are either a valid trace, which writes and reads
// back to the same trace, or refused with one line; never a panic.
func FuzzRead(f *testing.F) {
	// The smallest corpus trace, as it is now (the committed seeds in
	// testdata/fuzz may be of an older version).
	if b, err := os.ReadFile(filepath.Join("corpus", "HDFS-3359.trace")); err == nil {
		f.Add(b)
		f.Add(bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")))
		f.Add(b[:len(b)/2])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := Read(bytes.NewReader(b))
		if err != nil {
			if !IsBadTrace(err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("not a one-line bad-trace error: %q", err)
			}
			return
		}
		var buf bytes.Buffer
		if _, err := tr.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		again, err := Read(&buf)
		if err != nil {
			t.Fatalf("an accepted trace, written again, is refused: %v", err)
		}
		if again.Header.Checksum != tr.Header.Checksum || len(again.Events) != len(tr.Events) {
			t.Fatal("an accepted trace changes when written and read again")
		}
	})
}
