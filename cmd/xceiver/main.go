// Command xceiver runs the data path in the simulated or the real world:
// property checks over many seeds, single scenarios, trace replay, and the
// side-by-side validation of the simulator against real sockets.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Exit codes: 0 success, 1 a check or validation failed, 2 bad usage or
// input.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

const usage = `usage: xceiver COMMAND [flags]

commands:
  check    [--seeds N] [--seed S] [--parallel P] [--shard i/n] [--out DIR] [--json]
  replay   TRACE [--html FILE]
  run      SCENARIO [--world sim|real] [--seed S] [--trace FILE] [--json] [scenario flags]
  validate [--scenario NAME] [--json]
  bench    EXPERIMENT [--world sim|real|both] [--json]

scenarios: tcp-pattern, read
run "xceiver COMMAND -h" for a command's flags
`

type command func(args []string, stdout, stderr io.Writer) int

func commands() map[string]command {
	return map[string]command{
		"run":      cmdRun,
		"check":    cmdCheck,
		"replay":   cmdReplay,
		"validate": cmdValidate,
		"bench":    cmdBench,
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "xceiver: unknown command %q (want check, replay, run, validate or bench)\n", args[0])
		return exitUsage
	}
	return cmd(args[1:], stdout, stderr)
}

// usageError is bad input from the user: one line, exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// newFlagSet makes a flag set that reports errors in one line instead of
// printing the whole usage.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args, allowing flags after positional arguments.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stderr)
				fs.PrintDefaults()
				return nil, err
			}
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// report prints err as one line and returns the exit code it deserves.
func report(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	fmt.Fprintf(stderr, "xceiver: %s\n", msg)
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFail
}
