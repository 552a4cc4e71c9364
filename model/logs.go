package model

// LogKeys is every trace log event that code under model/ writes
// (Process.Log's kind) with the keys its fields may have. A trace is read
// by people and by `replay --html`; a field under the wrong key, or a
// value logged as a key, misleads both. TestLogCallsMatchSchema holds
// every call site to it, and sim checks each event against it in property
// runs (sim.Config.LogKeys), so a swapped pair fails a check.
var LogKeys = map[string][]string{
	// datanode.go
	"accept-error":       {"err", "failures"},
	"dn-full-evict":      {"conn", "ops", "newest", "partial"},
	"thread-error":       {"err"},
	"dn-truncated":       {"conn", "bytes"},
	"dn-read-error":      {"block", "err"},
	"dn-resume-timeout":  {"conn", "wait"},
	"dn-send-timeout":    {"conn", "idle"},
	"dn-stalled":         {"conn", "idle"},
	"dn-write-stalled":   {"conn", "idle"},
	"dn-write-yielded":   {"conn", "held"},
	"dn-request-timeout": {"conn", "phase", "bytes"},
	"dn-read-timeout":    {"conn", "phase"},
	"dn-op-error":        {"conn", "err"},
	// client.go
	"client-timeout":   {"client", "block"},
	"client-checksum":  {"block", "err"},
	"client-dead-peer": {"client", "err"},
	// tcppattern.go
	"server-conn-error": {"err"},
	// AcceptAll's kinds (accept.go)
	"sc-accept-error":  {"err"},
	"rpc-accept-error": {"err"},
	// shortcircuit
	"sc-release-error": {"shm", "slot", "err"},
	"sc-fallback":      {"err"},
	"sc-read-timeout":  {"conn"},
	"sc-send-error":    {"conn", "err"},
	"sc-error":         {"conn", "err"},
	"sc-conn-refused":  {"conn", "open"},
	"sc-conn-no-room":  {"conn"},
	"sc-conn-evicted":  {"conn"},
	"sc-conns-full":    {"conn", "domain", "conns"},
	// rpc
	"rpc-bad-response": {"conn", "err"},
	"rpc-bad-frame":    {"conn", "err"},
	"rpc-close":        {"conn", "why"},
	"rpc-throttled":    {"conn", "calls", "pending"},
	"rpc-purge":        {"conn", "waiting"},
	// namespace
	"editlog-replay-refused": {"method", "path", "code"},
	"editlog-sync-failed":    {"err"},
}
