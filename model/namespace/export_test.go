package namespace

// SetAfterResolve makes the next ReadFile run h between resolving the file
// and reading its blocks.
func (c *Client) SetAfterResolve(h func(then func())) { c.afterResolve = h }

// EditRecord encodes an edit as the log holds it.
func EditRecord(txid uint64, r Request) []byte { return editRecord(txid, r) }
