package model

// PageSize is the page the kernel maps (and caches) at a time.
const PageSize = 4096

// Touched is how far into a buffer a process has used it, so that the
// first use of each page is charged (CPUFirstTouch) where it happens: Go
// hands out large buffers untouched, and the kernel maps each page the
// first time a syscall copies into or out of it. A fresh process's first
// read into a 64 KiB buffer costs a real run 190–320 µs where the next
// ones cost 4–12, and that slowness is part of what a peer's TCP sees
// (the window, the receiver's RTT estimate). A buffer used from its
// start is all Touched follows; the zero value is a buffer not used yet.
type Touched int

// Use declares that the next syscall uses the first n bytes of the buffer:
// the pages among them not used before are charged to p.
func (t *Touched) Use(p Process, n int) {
	if n <= int(*t) {
		return
	}
	if fresh := Pages(n) - Pages(int(*t)); fresh > 0 {
		p.CPU(CPUFirstTouch, fresh*PageSize)
	}
	*t = Touched(n)
}

// Pages is how many pages n bytes from a page's start take.
func Pages(n int) int { return (n + PageSize - 1) / PageSize }
