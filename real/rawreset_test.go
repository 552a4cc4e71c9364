package real

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// On raw Linux sockets, with no wrapper: data queued before a reset is
// read first, then ECONNRESET, then EOF, whether or not SO_ERROR was read
// first (as the real world's dispatch does). The ground truth for
// model.TestDataThenResetReads.
func TestRawLinuxDataThenReset(t *testing.T) {
	for _, soerrFirst := range []bool{false, true} {
		lfd, _ := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
		unix.Listen(lfd, 4)
		sa, _ := unix.Getsockname(lfd)
		cfd, _ := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err := unix.Connect(cfd, sa); err != nil {
			t.Fatal(err)
		}
		sfd, _, _ := unix.Accept(lfd)
		unix.Write(sfd, []byte("hello"))
		unix.SetsockoptLinger(sfd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
		unix.Close(sfd)
		time.Sleep(20 * time.Millisecond)
		if soerrFirst {
			v, _ := unix.GetsockoptInt(cfd, unix.SOL_SOCKET, unix.SO_ERROR)
			t.Logf("SO_ERROR %v", unix.Errno(v))
		}
		buf := make([]byte, 16)
		for i := 0; i < 3; i++ {
			n, err := unix.Read(cfd, buf)
			t.Logf("soerrFirst=%v read %d: n=%d err=%v", soerrFirst, i, n, err)
		}
		unix.Close(cfd)
		unix.Close(lfd)
	}
}
