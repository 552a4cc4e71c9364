package main

import (
	"errors"
	"io"
)

var errPending = errors.New("not built yet")

func cmdCheck(args []string, stdout, stderr io.Writer) int  { return report(stderr, errPending) }
func cmdReplay(args []string, stdout, stderr io.Writer) int { return report(stderr, errPending) }
