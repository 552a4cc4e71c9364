package shortcircuit_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/real"
	"xceiver/sim"
)

// The fds a datanode passes are read-only: fcntl(F_GETFL) on the
// received fds says O_RDONLY, and a write through them fails.
func TestPassedFDsAreReadOnlyReal(t *testing.T) {
	w, closeWorld := realWorld(t)
	var modes []int
	var writeErr error
	var after rest
	e := startEnv(t, w, "127.0.0.1:0", "dn_socket", shortcircuit.SharedConfig{}, shortcircuit.ClientConfig{}, func(e *env) {
		p := e.cp
		steps(
			func(next func()) {
				rawExchange(p, "dn_socket", shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm}), 300*time.Millisecond, func(r rawResult, shmConn model.Conn) {
					resp, _, err := shortcircuit.DecodeResponse(r.got)
					if err != nil || len(r.files) != 1 {
						e.w.Fail(errors.New("no segment"))
						return
					}
					r.files[0].Close()
					rawExchange(p, "dn_socket", fdsReq(1, 0, resp.ShmID, 0, goodToken(1, 0)), 300*time.Millisecond, func(r rawResult, c model.Conn) {
						for _, f := range r.files {
							m, err := real.AccessMode(f)
							if err != nil {
								e.w.Fail(err)
							}
							modes = append(modes, m)
						}
						if len(r.files) > 0 {
							_, writeErr = r.files[0].WriteAt([]byte("x"), 0)
						}
						for _, f := range r.files {
							f.Close()
						}
						c.Close()
						shmConn.Close()
						next()
					})
				})
			},
			e.finish(&after),
		)
	})
	if len(modes) != 2 || modes[0] != unix.O_RDONLY || modes[1] != unix.O_RDONLY {
		t.Errorf("passed fds opened with access modes %v, want 2 × O_RDONLY (%d)", modes, unix.O_RDONLY)
	}
	if writeErr == nil {
		t.Error("wrote through a passed fd")
	}
	e.checkRest(t, after)
	if err := closeWorld(); err != nil {
		t.Error(err)
	}
}

// The socket path is checked at bind: a directory writable by others or
// owned by another user is refused with one line naming it.
func TestSocketPathCheckedReal(t *testing.T) {
	root := t.TempDir()
	w, err := real.New(real.Config{Seed: 1, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	open := filepath.Join(root, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(root, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	sticky := filepath.Join(root, "sticky")
	if err := os.Mkdir(sticky, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(sticky, "dn"), 0o755); err != nil {
		t.Fatal(err)
	}
	var errs []error
	w.Spawn("dn", model.ProcessConfig{}, func(p model.Process) {
		for _, path := range []string{open + "/dn_socket", private + "/dn_socket", sticky + "/dn_socket", sticky + "/dn/dn_socket", "/proc/1/root/x/dn_socket"} {
			errs = append(errs, p.CheckSocketPath(path))
		}
		w.Stop()
	})
	if err := w.Run(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	wantBad := []bool{true, false, true, false, true}
	for i, err := range errs {
		if (err != nil) != wantBad[i] {
			t.Errorf("path %d: %v, want refused %v", i, err, wantBad[i])
		}
	}
	if !errors.Is(errs[0], model.ErrInsecurePath) {
		t.Errorf("world-writable directory: %v", errs[0])
	}
}

// In sim, a directory marked writable by others makes Start refuse the
// path; another path works.
func TestSocketPathCheckedSim(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	w.SetInsecureDir("/tmp")
	var bad, good error
	w.Spawn("dn", model.ProcessConfig{}, func(p model.Process) {
		dn, err := model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: "dn:1"})
		if err != nil {
			w.Fail(err)
			return
		}
		_, bad = shortcircuit.Start(dn, shortcircuit.ServerConfig{Path: "/tmp/sockets/dn_socket"})
		srv, err := shortcircuit.Start(dn, shortcircuit.ServerConfig{Path: "/run/dn_socket"})
		good = err
		if err == nil {
			srv.Stop()
		}
		dn.Stop()
	})
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(bad, model.ErrInsecurePath) || good != nil {
		t.Errorf("insecure path: %v; secure path: %v", bad, good)
	}
}
