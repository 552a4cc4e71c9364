package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"xceiver/real"
)

// exitInterrupted is the exit code of a check or mutate stopped by SIGINT
// or SIGTERM after it reported what it had done: 128 + SIGINT, as a
// shell reports a command Ctrl-C ended, so scripts see an incomplete
// run, not a pass or a failure.
const exitInterrupted = 130

// interrupts is where routeInterrupts sends SIGINT and SIGTERM: to the
// command watching for them (watchInterrupt), if one is.
var interrupts struct {
	mu    sync.Mutex
	first func(os.Signal)
	// last are what a command has to undo before a signal ends the
	// process (atInterruptExit).
	last []*func()
}

// atInterruptExit has f run before a signal ends the process (a second
// interrupt, or one no command watches), as the real world's
// directories are removed: mutate kills the process groups it started
// and removes its scratch directory. The returned func unregisters f.
func atInterruptExit(f func()) (remove func()) {
	p := &f
	interrupts.mu.Lock()
	interrupts.last = append(interrupts.last, p)
	interrupts.mu.Unlock()
	return func() {
		interrupts.mu.Lock()
		defer interrupts.mu.Unlock()
		interrupts.last = slices.DeleteFunc(interrupts.last, func(q *func()) bool { return q == p })
	}
}

// routeInterrupts takes SIGINT and SIGTERM for the process's life (the
// returned func gives them back). The first goes to the command
// watching, if one is (check and mutate stop and report). Any other, or
// the first when no command watches, ends the process as the signal's
// default action would (a second Ctrl-C ends a check at once), once the
// real world's temporary directories are removed (a Ctrl-C of validate
// used to leave them in /tmp). A signal the process started out
// ignoring stays ignored (a background job of a non-interactive shell
// is not meant to take the terminal's Ctrl-C).
func routeInterrupts(stderr io.Writer) (stop func()) {
	var sigs []os.Signal
	for _, s := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	if len(sigs) == 0 {
		return func() {}
	}
	c := make(chan os.Signal, 2)
	signal.Notify(c, sigs...)
	done := make(chan struct{})
	go func() {
		for {
			var s os.Signal
			select {
			case s = <-c:
			case <-done:
				return
			}
			interrupts.mu.Lock()
			first, last := interrupts.first, slices.Clone(interrupts.last)
			interrupts.first = nil
			interrupts.mu.Unlock()
			if first != nil {
				// Not waited for: a watch that waits on its command (a
				// lock held by a worker blocked on stdout) must not keep
				// the next signal from being taken.
				go first(s)
				continue
			}
			dying.Store(true)
			for _, f := range last {
				(*f)()
			}
			if removed, err := real.RemoveScratch(); err != nil {
				fmt.Fprintf(stderr, "xceiver: %s: removing the real world's temporary directories: %v\n", signalName(s), err)
			} else if len(removed) > 0 {
				fmt.Fprintf(stderr, "xceiver: %s: removed the real world's temporary directories\n", signalName(s))
			}
			signal.Stop(c) // the default action, for the signal sent again
			if n, ok := s.(syscall.Signal); ok {
				_ = syscall.Kill(syscall.Getpid(), n)
			}
			return
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(c)
			close(done)
		})
	}
}

// dying is set once a signal is ending the process: the command may end
// first (its real world gone under it), and must not exit with a code of
// its own before the signal's default action ends it.
var dying atomic.Bool

// watchInterrupt is how a long command learns it was asked to stop:
// first runs once, on the first SIGINT or SIGTERM that routeInterrupts
// takes while the watch lasts. The returned func ends the watch; calling
// it again does nothing. A variable, so that tests interrupt a command
// at a point of their choosing.
var watchInterrupt = func(first func(os.Signal)) (stop func()) {
	interrupts.mu.Lock()
	interrupts.first = first
	interrupts.mu.Unlock()
	return func() {
		interrupts.mu.Lock()
		interrupts.first = nil
		interrupts.mu.Unlock()
	}
}

// watch is watchInterrupt with the signal kept: signalled is "" until
// the watch has taken a signal, then its name, kept before first runs,
// so that whoever sees what first did (a closed channel, a cancelled
// context) reads the name too. Check's two runners and mutate all learn
// of an interrupt so.
func watch(first func(os.Signal)) (signalled func() string, stop func()) {
	var name atomic.Pointer[string]
	stop = watchInterrupt(func(s os.Signal) {
		n := signalName(s)
		name.Store(&n)
		first(s)
	})
	return func() string {
		if p := name.Load(); p != nil {
			return *p
		}
		return ""
	}, stop
}

// signalName is SIGINT for os.Interrupt, and so on.
func signalName(s os.Signal) string {
	if n, ok := s.(syscall.Signal); ok {
		if name := unix.SignalName(n); name != "" {
			return name
		}
	}
	return s.String()
}

// sayInterrupted tells the user, on stderr, what an interrupted check does
// before it exits.
func sayInterrupted(stderr io.Writer, s os.Signal) {
	fmt.Fprintf(stderr, "xceiver check: %s: finishing the seeds already running, then the summary (interrupt again to quit at once)\n", signalName(s))
}
