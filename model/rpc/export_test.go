package rpc

// SetNextCallID makes the next call cl makes to addr, on the connection it
// holds there, take id: a test reaches the ids near FatalID without four
// billion calls.
func SetNextCallID(cl *Client, addr string, id uint32) {
	cl.conns[addr].nextID = id
}
