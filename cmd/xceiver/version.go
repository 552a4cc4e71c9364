package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"xceiver/traces"
)

// buildVersion is what `xceiver version` reports.
type buildVersion struct {
	Module      string `json:"module"`
	Version     string `json:"version"`
	Revision    string `json:"vcs_revision,omitempty"`
	Time        string `json:"vcs_time,omitempty"`
	Modified    bool   `json:"vcs_modified,omitempty"`
	Go          string `json:"go"`
	TraceFormat int    `json:"trace_format"`
	CodeVersion string `json:"code_version"`
}

func readBuildVersion() buildVersion {
	v := buildVersion{Module: "xceiver", Version: "(unknown)", Go: runtime.Version(),
		TraceFormat: traces.Format, CodeVersion: traces.CodeVersion}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Module, v.Version, v.Go = bi.Main.Path, bi.Main.Version, bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func versionCommand() *command {
	return &command{
		name:    "version",
		summary: "print the module version, VCS revision and time, Go version, trace format and code version",
		about: func() string {
			return `The revision and time come from the build info: a binary built from a
git checkout (go build, go install) has them; go run and go test do not.
"xceiver --version" is the same.`
		},
		example: []string{"xceiver version --json"},
		setup: func(c *call) func([]string) int {
			asJSON := c.fs.Bool("json", false, "print one JSON object")
			return func(rest []string) int {
				if len(rest) > 0 {
					return report(c.stderr, c.usagef("unexpected argument %q", rest[0]))
				}
				v := readBuildVersion()
				if *asJSON {
					b, _ := json.Marshal(v)
					fmt.Fprintln(c.stdout, string(b))
					return exitOK
				}
				rev := "(none: built without VCS stamping, as by go run or -buildvcs=false)"
				if v.Revision != "" {
					rev = v.Revision
					if v.Modified {
						rev += " (modified)"
					}
					if v.Time != "" {
						rev += ", " + v.Time
					}
				}
				fmt.Fprintf(c.stdout, "xceiver %s (module %s)\nrevision      %s\ngo            %s\ntrace format  %d\ncode version  %s\n",
					v.Version, v.Module, rev, v.Go, v.TraceFormat, v.CodeVersion)
				return exitOK
			}
		},
	}
}
