package real

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// rawUnixPair is a non-blocking connected pair of raw Unix stream sockets.
func rawUnixPair(t *testing.T) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

// rawRecv is one recvmsg of up to n bytes, named as "bytes"+Nfd; the fds
// received are closed.
func rawRecv(fd, n int) string {
	b := make([]byte, n)
	oob := make([]byte, unix.CmsgSpace(4*maxPassFDs))
	m, oobn, _, _, err := unix.Recvmsg(fd, b, oob, unix.MSG_DONTWAIT)
	if err != nil {
		return err.Error()
	}
	nf := 0
	msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
	for _, msg := range msgs {
		fds, _ := unix.ParseUnixRights(&msg)
		nf += len(fds)
		for _, f := range fds {
			unix.Close(f)
		}
	}
	return fmt.Sprintf("%q+%dfd", b[:m], nf)
}

// On raw Linux Unix stream sockets, with no wrapper: where a read stops
// around a message carrying fds, how many fds a message may carry, and
// how many connections a backlog admits. The ground truth for the sim's
// Unix sockets (model.TestUnixReadStopsAfterFDs and the tests beside it).
func TestRawLinuxUnixFDPassing(t *testing.T) {
	f, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rights := unix.UnixRights(int(f.Fd()))
	send := func(fd int, p string, oob []byte) error {
		_, err := unix.SendmsgN(fd, []byte(p), oob, nil, unix.MSG_DONTWAIT)
		return err
	}
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %s, want %s", what, got, want)
		}
	}

	// A read takes the bytes before a message with fds and stops after it.
	a, b := rawUnixPair(t)
	send(a, "aaa", nil)
	send(a, "bbb", rights)
	send(a, "ccc", nil)
	check("[aaa][bbb+fd][ccc]", rawRecv(b, 100)+" "+rawRecv(b, 100), `"aaabbb"+1fd "ccc"+0fd`)

	// A partial read of a message takes its fds with its first bytes;
	// the rest of it no longer carries any, so the next read runs on
	// into the next message, and stops after that one's fds.
	a, b = rawUnixPair(t)
	send(a, "xx", rights)
	send(a, "y", rights)
	check("[xx+fd][y+fd], a read of 1, then of 100", rawRecv(b, 1)+" "+rawRecv(b, 100), `"x"+1fd "xy"+1fd`)

	// read(2) of a message with fds stops after it too.
	a, b = rawUnixPair(t)
	send(a, "aaa", rights)
	send(a, "bbb", nil)
	buf := make([]byte, 100)
	n, err := unix.Read(b, buf)
	check("read() of [aaa+fd][bbb]", fmt.Sprintf("%q %v", buf[:max(n, 0)], err), `"aaa" <nil>`)

	// SCM_MAX_FD: 253 fds a message, EINVAL beyond.
	a, _ = rawUnixPair(t)
	many := make([]int, maxPassFDs+1)
	for i := range many {
		many[i] = int(f.Fd())
	}
	check("254 fds", fmt.Sprint(send(a, "x", unix.UnixRights(many...))), unix.EINVAL.Error())
	check("253 fds", fmt.Sprint(send(a, "x", unix.UnixRights(many[:maxPassFDs]...))), "<nil>")

	// A backlog of 1 admits two connections; the third connect is EAGAIN.
	// A missing path is ENOENT; a closed listener's, ECONNREFUSED.
	path := filepath.Join(t.TempDir(), "s")
	ln, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err := unix.Bind(ln, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	unix.Listen(ln, 1)
	connect := func(p string) string {
		c, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
		t.Cleanup(func() { unix.Close(c) })
		return fmt.Sprint(unix.Connect(c, &unix.SockaddrUnix{Name: p}))
	}
	check("backlog 1", connect(path)+" "+connect(path)+" "+connect(path), "<nil> <nil> "+unix.EAGAIN.Error())
	check("missing path", connect(path+"x"), unix.ENOENT.Error())
	unix.Close(ln)
	check("closed listener", connect(path), unix.ECONNREFUSED.Error())
}
