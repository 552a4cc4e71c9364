package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
)

// command is one subcommand, declared in one place: synopsis, help,
// example, flags and body. Help, the top-level synopsis and the README
// test are all generated from it.
type command struct {
	name    string
	args    string // positional arguments in the synopsis, e.g. "TRACE"; "" for none
	more    string // what the synopsis ends with after the flags, e.g. "[scenario flags]"
	summary string // one line for `xceiver help`
	// about explains the arguments and anything else help should say
	// (lists of experiments, scenarios, bugs); it may be empty.
	about   func() string
	example []string
	// setup declares the command's flags on c.fs and returns the body,
	// which runs with the positional arguments once the flags are parsed
	// and validated. c.raw holds the arguments as typed (nil when only
	// help or the synopsis is wanted) for commands whose flags depend on
	// an argument (run SCENARIO).
	setup func(c *call) func(args []string) int
}

// call is one invocation of a command.
type call struct {
	cmd            *command
	fs             *flag.FlagSet
	raw            []string
	stdout, stderr io.Writer
	// err, set by setup, is reported before the flags are parsed.
	err error
	// sections are further groups of flags help lists after the
	// command's own (run lists each scenario's).
	sections []flagSection
	// emptyOK names string flags for which "" is a meaningful value.
	emptyOK map[string]bool
}

type flagSection struct {
	title string
	fs    *flag.FlagSet
}

// dryRun, set by the command-line fuzz test, makes commands return once
// their arguments are parsed and validated, before any work.
var dryRun bool

// errHelp is returned when help was asked for and printed.
var errHelp = errors.New("help printed")

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

func (cmd *command) newCall(raw []string, stdout, stderr io.Writer) (*call, func([]string) int) {
	c := &call{cmd: cmd, fs: newFlagSet(cmd.name), raw: raw, stdout: stdout, stderr: stderr}
	body := cmd.setup(c)
	return c, body
}

// main runs the command with its arguments (after the command name).
func (cmd *command) main(args []string, stdout, stderr io.Writer) int {
	c, body := cmd.newCall(args, stdout, stderr)
	if wantsHelp(args) {
		c.printHelp(stdout)
		return exitOK
	}
	if c.err != nil {
		return report(stderr, c.err)
	}
	rest, err := c.parse(args)
	if err != nil {
		return report(stderr, err)
	}
	return body(rest)
}

func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// parse parses args, allowing flags before and after positional
// arguments, and validates what the flag package lets through: a string
// flag given as "" (which would otherwise silently mean its default).
func (c *call) parse(args []string) ([]string, error) {
	var positional []string
	for {
		if err := c.fs.Parse(args); err != nil {
			return nil, c.flagError(err, args)
		}
		rest := c.fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			positional = append(positional, rest...) // after --, all arguments
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	var err error
	c.fs.Visit(func(f *flag.Flag) {
		if err != nil || c.emptyOK[f.Name] {
			return
		}
		if g, ok := f.Value.(flag.Getter); ok {
			if s, ok := g.Get().(string); ok && s == "" {
				if f.DefValue == "" {
					err = c.usagef("%s is empty: give a value, or leave the flag out", c.typed(f.Name))
				} else {
					err = c.usagef("%s is empty: give a value, or leave the flag out for its default (%s)", c.typed(f.Name), f.DefValue)
				}
			}
		}
	})
	return positional, err
}

// usagef is a usage error prefixed with the command's name.
func (c *call) usagef(format string, a ...any) error {
	return usagef(c.cmd.name+": "+format, a...)
}

// typed is the flag as the user typed it (-x or --x), --x if not typed.
func (c *call) typed(name string) string {
	for _, a := range c.raw {
		if a == "--" {
			break
		}
		dashes := len(a) - len(strings.TrimLeft(a, "-"))
		if dashes == 0 || dashes > 2 {
			continue
		}
		n, _, _ := strings.Cut(a[dashes:], "=")
		if n == name {
			return a[:dashes] + name
		}
	}
	return "--" + name
}

// flagError rewrites the flag package's errors into one line that names
// the flag as typed, with the command's prefix.
func (c *call) flagError(err error, args []string) error {
	msg := err.Error()
	name := func(after string) string {
		_, n, _ := strings.Cut(msg, after)
		n, _, _ = strings.Cut(n, ":")
		return strings.TrimLeft(strings.TrimSpace(n), "-")
	}
	switch {
	case strings.HasPrefix(msg, "flag provided but not defined:"):
		n := name("defined:")
		return c.usagef("unknown flag %s (\"xceiver %s -h\" lists the flags)", c.typed(n), c.cmd.name)
	case strings.HasPrefix(msg, "flag needs an argument:"):
		return c.usagef("%s needs a value", c.typed(name("argument:")))
	case strings.HasPrefix(msg, "invalid value"), strings.HasPrefix(msg, "invalid boolean value"):
		// invalid value "x" for flag -n: reason
		_, after, _ := strings.Cut(msg, " for ")
		after = strings.TrimPrefix(after, "flag ")
		n, reason, _ := strings.Cut(after, ": ")
		n = strings.TrimLeft(n, "-")
		val := ""
		if f := c.fs.Lookup(n); f != nil {
			val = " (" + valueKind(f) + ")"
		}
		_, q, _ := strings.Cut(msg, "value ")
		q, _, _ = strings.Cut(q, " for ")
		return c.usagef("%s %s: %s%s", c.typed(n), q, simplifyReason(reason), val)
	case strings.HasPrefix(msg, "bad flag syntax:"):
		return c.usagef("bad flag syntax %s", strings.TrimSpace(strings.TrimPrefix(msg, "bad flag syntax:")))
	}
	return c.usagef("%v", err)
}

func simplifyReason(r string) string {
	switch {
	case strings.Contains(r, "parse error"), strings.Contains(r, "invalid syntax"):
		return "not valid"
	case strings.Contains(r, "value out of range"):
		return "out of range"
	}
	return r
}

// valueKind says what a flag wants, for error messages and help.
func valueKind(f *flag.Flag) string {
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case int, int64:
			return "want an integer"
		case uint, uint64:
			return "want a non-negative integer"
		case float64:
			return "want a number"
		case bool:
			return "want true or false"
		case interface{ Seconds() float64 }:
			return "want a duration such as 500ms or 4s"
		}
	}
	return "see -h"
}

// placeholder is how the synopsis names a flag's value: the `WORD` in
// backquotes in its usage (capitalised unless it is a choice such as
// `sim|real`), else its type in capitals; "" for a bool.
func placeholder(f *flag.Flag) string {
	name, _ := flag.UnquoteUsage(f)
	if name == "" {
		return ""
	}
	if name == "value" {
		return "VALUE"
	}
	if strings.ContainsAny(name, "|/") {
		return name // a choice, such as sim|real
	}
	return strings.ToUpper(name)
}

// flagSynopsis is "[--a] [--b N] ..." for fs, in name order.
func flagSynopsis(fs *flag.FlagSet) string {
	var parts []string
	fs.VisitAll(func(f *flag.Flag) {
		if p := placeholder(f); p != "" {
			parts = append(parts, fmt.Sprintf("[--%s %s]", f.Name, p))
		} else {
			parts = append(parts, fmt.Sprintf("[--%s]", f.Name))
		}
	})
	return strings.Join(parts, " ")
}

// synopsis is the command's one-line usage, generated from its flags.
func (cmd *command) synopsis() string {
	c, _ := cmd.newCall(nil, io.Discard, io.Discard)
	s := "xceiver " + cmd.name
	if cmd.args != "" {
		s += " " + cmd.args
	}
	if fl := flagSynopsis(c.fs); fl != "" {
		s += " " + fl
	}
	if cmd.more != "" {
		s += " " + cmd.more
	}
	return s
}

func (cmd *command) printHelp(w io.Writer) {
	c, _ := cmd.newCall(nil, io.Discard, io.Discard)
	c.printHelp(w)
}

// flagNames lists every flag the command's help documents, sections
// included (for the README test).
func (cmd *command) flagNames() (own []string, sections map[string][]string) {
	c, _ := cmd.newCall(nil, io.Discard, io.Discard)
	c.fs.VisitAll(func(f *flag.Flag) { own = append(own, f.Name) })
	sections = map[string][]string{}
	for _, s := range c.sections {
		s.fs.VisitAll(func(f *flag.Flag) { sections[s.title] = append(sections[s.title], f.Name) })
	}
	return own, sections
}

func (c *call) printHelp(w io.Writer) {
	cmd := c.cmd
	fmt.Fprintf(w, "usage: %s\n\n%s\n", cmd.synopsis(), cmd.summary)
	if cmd.about != nil {
		if a := strings.TrimRight(cmd.about(), "\n"); a != "" {
			fmt.Fprintf(w, "\n%s\n", a)
		}
	}
	printFlags(w, "flags", c.fs)
	for _, s := range c.sections {
		printFlags(w, s.title, s.fs)
	}
	if len(cmd.example) > 0 {
		fmt.Fprintf(w, "\nexample%s:\n", plural(len(cmd.example), "", "s"))
		for _, e := range cmd.example {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

func printFlags(w io.Writer, title string, fs *flag.FlagSet) {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		_, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if p := placeholder(f); p != "" {
			name += " " + p
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			def = fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(tw, "  %s\t%s%s\n", name, usage, def)
	})
	tw.Flush()
}

// plural picks one or many by n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// countFlags are a scenario's flags that count loops, threads, shards
// or replicas, registered once (intVar) and checked once parsed (check).
// The model's configurations read 0 as "the default", so without the
// check --handlers 0 ran with the default's ten handlers (and reported 0).
type countFlags []countFlag

type countFlag struct {
	name string
	v    *int
}

// intVar defines an int flag as fs.IntVar does, its default *p, and
// keeps it for check.
func (cf *countFlags) intVar(fs *flag.FlagSet, p *int, name, usage string) {
	fs.IntVar(p, name, *p, usage)
	*cf = append(*cf, countFlag{name, p})
}

// check rejects a count below 1.
func (cf countFlags) check(cmd string) error {
	for _, f := range cf {
		if *f.v < 1 {
			return usagef("%s: --%s %d: want at least 1", cmd, f.name, *f.v)
		}
	}
	return nil
}

// checkOutDir makes sure dir can hold output before a long run starts: it
// is a directory (or can be created as one) and is writable. It creates
// nothing.
func checkOutDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("%s is a file, not a directory", dir)
	case err == nil:
		return probeWritable(dir)
	case !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return err
	}
	// The nearest existing ancestor must be a writable directory.
	parent := filepath.Dir(filepath.Clean(dir))
	for {
		st, err := os.Stat(parent)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("cannot create %s: %s is a file", dir, parent)
			}
			if err := probeWritable(parent); err != nil {
				return fmt.Errorf("cannot create %s: %w", dir, err)
			}
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return err
		}
		up := filepath.Dir(parent)
		if up == parent {
			return fmt.Errorf("cannot create %s", dir)
		}
		parent = up
	}
}

func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".xceiver-probe-*")
	if err != nil {
		return fmt.Errorf("%s is not writable", dir)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// checkOutFile makes sure a file can be written at path before a run
// starts, without leaving one behind if it did not exist.
func checkOutFile(path string) error {
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return fmt.Errorf("%s is a directory", path)
		}
		if isTrace(path) {
			// A failure's trace may be all that is left of it: an
			// output flag given its name by a slip would destroy it.
			return fmt.Errorf("%s is a trace (replay reads it); name another file", path)
		}
		// Non-blocking: a FIFO nobody reads would hold the open for
		// good; so it fails at once (ENXIO) instead.
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("%s is not writable", path)
		}
		return f.Close()
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("no directory %s", dir)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return probeWritable(dir)
}

// isTrace reports whether path holds a trace by its first fields: a JSON
// trace's format ("xceiver-rpc-trace/13"), or a data-path trace's number
// with the simulator's code version beside it. Only the head is read, not
// the whole file verified: a trace of another version, or a damaged one,
// is still all that may be left of a failure.
func isTrace(path string) bool {
	head := headFields(path, "format", "code_version")
	var format string
	if json.Unmarshal(head["format"], &format) == nil {
		return strings.HasPrefix(format, "xceiver-") && strings.Contains(format, "-trace/")
	}
	var n int
	var version string
	return json.Unmarshal(head["format"], &n) == nil && json.Unmarshal(head["code_version"], &version) == nil &&
		strings.HasPrefix(version, "xceiver-sim-")
}

// readInput reads a file a flag or an argument names, up to limit bytes.
// It refuses what is not a regular file: a FIFO nobody writes would block
// the read for good, and /dev/zero never ends (as --profile, it grew to
// 5 GB before the runtime gave up).
func readInput(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case st.IsDir():
		return nil, fmt.Errorf("%s is a directory", path)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", path)
	case st.Size() > limit:
		return nil, fmt.Errorf("%s is %d bytes, more than the %d this reads", path, st.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s grew past the %d bytes this reads", path, limit)
	}
	return b, err
}

// sameFile reports whether out, a file a command is about to write,
// is in, a file it reads: writing it would destroy its own input.
func sameFile(out, in string) bool {
	if out == "" || in == "" {
		return false
	}
	a, errA := os.Stat(out)
	b, errB := os.Stat(in)
	return errA == nil && errB == nil && os.SameFile(a, b)
}

// matchName finds name among names ignoring case, so HDFS-4911 and
// hdfs-4911 both work; it returns the canonical spelling.
func matchName(name string, names []string) (string, bool) {
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return n, true
		}
	}
	return "", false
}

// isDir reports whether path names a directory now.
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
