package properties

import (
	"encoding/json"
	"fmt"
	"os"
)

// The rpc, short-circuit and scenario systems keep their failures as JSON
// traces: a header (format, property, message, events, hash) beside the
// system's own case. What follows is the part the three share, so a change
// to how traces are checked or replayed is made once.

// readJSONTrace reads path into t (a pointer to the system's trace type);
// kind names the trace in the error for a file that is not one ("an rpc").
func readJSONTrace(path, kind string, t any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, t); err != nil {
		return fmt.Errorf("%s: not %s trace: %w", path, kind, err)
	}
	return nil
}

// checkTraceHeader refuses a trace of another format (saying how to record
// it again) or one whose case would not pass the checks a drawn case does.
func checkTraceHeader(path, format, want, system string, seed uint64, bug string, validate func() error) error {
	if format != want {
		return fmt.Errorf("%s: format %q, want %q (record it again with xceiver check --system %s --seed %d --bug %s)", path, format, want, system, seed, bug)
	}
	if err := validate(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeJSONTrace writes t to path, indented, with a final newline.
func writeJSONTrace(path string, t any) error {
	b, err := json.MarshalIndent(t, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReplayMismatch says how a replay differs from its trace, or nil when it
// failed the same property with the same events.
func ReplayMismatch(property, wantProperty string, events, wantEvents uint64, hash, wantHash string) error {
	switch {
	case property != wantProperty:
		return fmt.Errorf("replay: property %q, trace says %q", property, wantProperty)
	case hash != wantHash || events != wantEvents:
		return fmt.Errorf("replay: %d events hash %s, trace says %d events hash %s", events, hash, wantEvents, wantHash)
	}
	return nil
}
