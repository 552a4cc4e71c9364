package model

import (
	"errors"
	"time"
)

// AcceptBackoff is how long AcceptAll stops accepting after a failed
// Accept.
const AcceptBackoff = 10 * time.Millisecond

// AcceptAll accepts every connection waiting on ln and hands each to serve,
// until none is left or stopped reports true. When Accept fails (EMFILE
// leaves the connection queued, so a level-triggered listener would spin),
// it logs the error under logKind and stops accepting for AcceptBackoff.
func AcceptAll(p Process, loop Loop, ln Listener, logKind string, stopped func() bool, serve func(Conn)) {
	for !stopped() {
		c, err := ln.Accept()
		if errors.Is(err, ErrWouldBlock) {
			return
		}
		if err != nil {
			p.Log(logKind, "err", err.Error())
			ln.SetHandler(nil)
			loop.AfterFunc(AcceptBackoff, func() {
				if !stopped() {
					ln.SetHandler(func() { AcceptAll(p, loop, ln, logKind, stopped, serve) })
				}
			})
			return
		}
		serve(c)
	}
}
