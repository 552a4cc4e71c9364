package real

import (
	"errors"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"

	"xceiver/model"
)

// ErrRunLimit is returned (wrapped) by World.Run when its time limit passes
// before Stop or Fail was called.
var ErrRunLimit = errors.New("real: run limit reached")

// ErrWorldClosed is returned by operations on a closed World.
var ErrWorldClosed = errors.New("real: world closed")

// sysError is a failed system call seen through the world interface: the
// model sentinel it maps to (so model code can use errors.Is with the
// model.Err* values) plus the errno it came from (so tools can still see the
// real cause).
type sysError struct {
	op    string     // what the world was doing: "listen", "read", ...
	obj   string     // what it was doing it to: an address, a path, a conn
	kind  error      // a model.Err* sentinel, or nil if the errno has none
	errno unix.Errno // the underlying errno, 0 if none
}

func (e *sysError) Error() string {
	msg := "real: " + e.op
	if e.obj != "" {
		msg += " " + e.obj
	}
	switch {
	case e.kind != nil && e.errno != 0:
		return fmt.Sprintf("%s: %v (%s)", msg, e.kind, unix.ErrnoName(e.errno))
	case e.kind != nil:
		return msg + ": " + e.kind.Error()
	default:
		return msg + ": " + e.errno.Error()
	}
}

// Unwrap lets errors.Is match both the model sentinel and the errno.
func (e *sysError) Unwrap() []error {
	var errs []error
	if e.kind != nil {
		errs = append(errs, e.kind)
	}
	if e.errno != 0 {
		errs = append(errs, e.errno)
	}
	return errs
}

// errnoKinds maps the errnos the model cares about onto its sentinels.
var errnoKinds = map[unix.Errno]error{
	unix.EAGAIN:       model.ErrWouldBlock,
	unix.ECONNRESET:   model.ErrReset,
	unix.ECONNABORTED: model.ErrReset,
	unix.ECONNREFUSED: model.ErrRefused,
	unix.ETIMEDOUT:    model.ErrTimedOut,
	unix.EPIPE:        model.ErrPipe,
	unix.EBADF:        model.ErrClosed,
	unix.EMFILE:       model.ErrTooManyFiles,
	unix.ENFILE:       model.ErrTooManyFiles,
	unix.EIO:          model.ErrIO,
	unix.ENOSPC:       model.ErrNoSpace,
	unix.EDQUOT:       model.ErrNoSpace,
	unix.ENOENT:       model.ErrNotExist,
	unix.EEXIST:       model.ErrExist,
	unix.ENOTEMPTY:    model.ErrExist,
	unix.EADDRINUSE:   model.ErrAddrInUse,
	unix.EOPNOTSUPP:   model.ErrNotSupported,
	unix.ENOPROTOOPT:  model.ErrNotSupported,
	unix.ENOTSOCK:     model.ErrNotSupported,
}

// wrapErr turns err from a system call into an error for model code. EAGAIN
// becomes the bare model.ErrWouldBlock: it is the common, expected case on
// every non-blocking path and needs no context (nor an allocation).
func wrapErr(op, obj string, err error) error {
	if err == nil {
		return nil
	}
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return fmt.Errorf("real: %s %s: %w", op, obj, err)
	}
	if errno == unix.EAGAIN {
		return model.ErrWouldBlock
	}
	return &sysError{op: op, obj: obj, kind: errnoKinds[errno], errno: errno}
}

// newErr builds an error of a model kind that no errno produced (the fd
// accounting limit, a closed object, a bad argument).
func newErr(op, obj string, kind error) error {
	return &sysError{op: op, obj: obj, kind: kind}
}

// badArg reports invalid input from model code; it wraps fs.ErrInvalid.
func badArg(op, obj, why string) error {
	return fmt.Errorf("real: %s %s: %s: %w", op, obj, why, fs.ErrInvalid)
}
