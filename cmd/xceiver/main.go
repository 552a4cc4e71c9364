// Command xceiver runs the data path in the simulated or the real world:
// property checks over many seeds, single scenarios, trace replay, and the
// side-by-side validation of the simulator against real sockets.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"xceiver/real"
	"xceiver/sim"
)

// Exit codes, documented in README.md and in `xceiver help`.
const (
	exitOK    = 0 // success
	exitFail  = 1 // a check, replay or validation found a failure
	exitUsage = 2 // bad usage or input: one line on stderr
	exitLimit = 3 // a run hit a resource limit (simulation or real-world run limit) before it ended
)

const exitCodesHelp = `exit codes:
  0  success
  1  a check, replay or validation failed, or the output could not be written
  2  bad usage or input (one line on stderr)
  3  a run hit a resource limit (simulation limit reached) before it ended
  130  check or mutate was interrupted (SIGINT or SIGTERM) and reported what it had done
`

// commandList declares every subcommand, in the order help lists them. A
// new command adds one entry here: its synopsis, help and flags all come
// from that entry.
func commandList() []*command {
	return []*command{
		checkCommand(),
		replayCommand(),
		runCommand(),
		validateCommand(),
		benchCommand(),
		calibrateCommand(),
		mutateCommand(),
		mergeCommand(),
		versionCommand(),
	}
}

func lookupCommand(name string) *command {
	for _, c := range commandList() {
		if c.name == name {
			return c
		}
	}
	return nil
}

func main() {
	os.Exit(runProcess(os.Args[1:]))
}

// runProcess is main's: run, with the process's interrupts routed
// (routeInterrupts).
func runProcess(args []string) int {
	defer routeInterrupts(os.Stderr)()
	code := run(args, os.Stdout, os.Stderr)
	for dying.Load() {
		time.Sleep(time.Second) // until the signal ends the process
	}
	return code
}

func run(args []string, stdout, stderr io.Writer) int {
	// Every command writes its results to stdout; a write that fails (a
	// full disk, a closed file) must not pass for results delivered.
	out := &errWriter{w: stdout}
	code := dispatch(args, out, stderr)
	if out.err != nil {
		fmt.Fprintf(stderr, "xceiver: writing the output: %v\n", out.err)
		if code == exitOK || code == exitInterrupted { // 130 says what was done was reported
			code = exitFail
		}
	}
	return code
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return report(stderr, usagef("xceiver: want a command (%s); \"xceiver help\" describes them", commandNames()))
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		// help, -h, -help and --help are one: alone, or with one
		// command whose help to print (or help itself).
		switch {
		case len(args) > 2:
			return report(stderr, usagef("%s: want one command at most, got %q", args[0], args[1:]))
		case len(args) == 2 && !isHelpName(args[1]):
			c := lookupCommand(args[1])
			if c == nil {
				return report(stderr, usagef("%s: unknown command %q (want %s)", args[0], args[1], commandNames()))
			}
			c.printHelp(stdout)
			return exitOK
		}
		fmt.Fprint(stdout, topUsage())
		return exitOK
	case "-version", "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	c := lookupCommand(args[0])
	if c == nil {
		if strings.HasPrefix(args[0], "-") {
			return report(stderr, usagef("xceiver: flag %s before the command: flags follow it (xceiver COMMAND [flags])", args[0]))
		}
		return report(stderr, usagef("xceiver: unknown command %q (want %s)", args[0], commandNames()))
	}
	return c.main(args[1:], stdout, stderr)
}

// isHelpName is whether "xceiver help NAME" asks for help itself.
func isHelpName(name string) bool {
	switch name {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

func commandNames() string {
	var names []string
	for _, c := range commandList() {
		names = append(names, c.name)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// topUsage is `xceiver help`: every command's synopsis, generated from its
// flags, so it cannot drift from them.
func topUsage() string {
	var b strings.Builder
	b.WriteString("usage: xceiver COMMAND [flags]   (flags may come before or after arguments)\n\ncommands:\n")
	for _, c := range commandList() {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	b.WriteString("\nsynopsis:\n")
	for _, c := range commandList() {
		fmt.Fprintf(&b, "  %s\n", c.synopsis())
	}
	b.WriteString("\n")
	b.WriteString(exitCodesHelp)
	b.WriteString("\nrun \"xceiver help COMMAND\" or \"xceiver COMMAND -h\" for a command's arguments, flags and an example\n")
	return b.String()
}

// usageError is bad input from the user: one line, exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// exitCode is the code err deserves.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, sim.ErrLimit), errors.Is(err, real.ErrRunLimit):
		return exitLimit
	}
	return exitFail
}

// report prints err as one line and returns the exit code it deserves.
func report(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errHelp) {
		return exitOK
	}
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	if !strings.HasPrefix(msg, "xceiver: ") {
		msg = "xceiver: " + msg
	}
	fmt.Fprintln(stderr, msg)
	return exitCode(err)
}
