package namespace

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
)

// Client calls a namespace by name over an rpc client and reads and writes
// files end to end: names resolved by rpc, data over the datanode's data
// path. All its methods run on the rpc client's loop.
type Client struct {
	RPC  *rpc.Client
	Loop model.Loop // the rpc client's loop (for OnCall's clock)
	Addr string     // the namespace server
	// Datanode reaches the datanode at a location's address.
	Datanode func(addr string) *model.Client
	// Stats
	Resolves, StaleRetries int
	// OnCall, if set, hears every call's method, latency and outcome.
	OnCall func(method uint8, d time.Duration, err error)
	// afterResolve, if set, runs between resolving and reading (tests use
	// it to make the locations stale).
	afterResolve func(then func())
	// tokens the namenode handed out, by block, held while an op uses them
	tokens map[uint64]heldToken
}

type heldToken struct {
	tok  []byte
	refs int
}

// MintToken hands a datanode client the token the namenode gave for the
// request's block (model.ClientConfig.MintToken): the client itself holds
// no key. With none held, the request goes without one and is refused.
func (c *Client) MintToken(req model.Request, _ time.Duration) []byte {
	return c.tokens[req.BlockID].tok
}

// Hold keeps tok for block while an op on it runs; Release drops it.
func (c *Client) Hold(block uint64, tok []byte) {
	if c.tokens == nil {
		c.tokens = map[uint64]heldToken{}
	}
	h := c.tokens[block]
	h.tok, h.refs = tok, h.refs+1
	c.tokens[block] = h
}

// Release undoes one Hold.
func (c *Client) Release(block uint64) {
	h, ok := c.tokens[block]
	if !ok {
		return
	}
	if h.refs--; h.refs <= 0 {
		delete(c.tokens, block)
		return
	}
	c.tokens[block] = h
}

// Do sends one request and decodes its answer. A namespace refusal is an
// *Error; a lost connection wraps rpc.ErrConnection.
func (c *Client) Do(r Request, done func(Response, error)) {
	if c.OnCall != nil {
		loop, start, inner := c.Loop, c.Loop.Now(), done
		done = func(resp Response, err error) {
			c.OnCall(r.Method, loop.Now()-start, err)
			inner(resp, err)
		}
	}
	// (Decoded before the reply's done returns, and DecodeResponse
	// keeps nothing of it: the rpc client need not copy it.)
	c.RPC.CallView(c.Addr, r.Method, EncodeRequest(r), func(rep rpc.Reply) {
		switch {
		case rep.Err != nil:
			done(Response{}, rep.Err)
		case rep.Status == rpc.StatusError && len(rep.Payload) == 1:
			done(Response{}, &Error{Code: Code(rep.Payload[0])})
		case rep.Status != rpc.StatusOK:
			done(Response{}, fmt.Errorf("namespace %s: %v", MethodName(r.Method), rep.Status))
		default:
			resp, err := DecodeResponse(r.Method, rep.Payload)
			done(resp, err)
		}
	})
}

// List lists a directory whole, a page (ListLimit entries) per call, as
// HDFS's listStatus pages through getListing. Like HDFS's, the whole is
// not one snapshot: a change between two pages shows in the later ones
// only.
func (c *Client) List(path string, done func([]Entry, error)) {
	var all []Entry
	var page func(after string)
	page = func(after string) {
		c.Do(Request{Method: MethodList, Path: path, After: after}, func(resp Response, err error) {
			all = append(all, resp.Entries...)
			switch {
			case err != nil:
				done(nil, err)
			case resp.Remaining == 0 || len(resp.Entries) == 0:
				done(all, nil)
			default:
				page(resp.Entries[len(resp.Entries)-1].Name)
			}
		})
	}
	page("")
}

// MaxStaleRetries bounds how often a read re-resolves a file whose blocks
// turned out to be gone or re-stamped.
const MaxStaleRetries = 3

// ReadFile resolves path and reads its blocks from the datanode. A block
// that is missing or has another stamp means the locations went stale (the
// file was deleted or re-created after they were resolved): the read
// starts over with fresh locations, up to MaxStaleRetries times.
func (c *Client) ReadFile(path string, done func([]byte, error)) {
	c.readFile(path, 0, done)
}

func (c *Client) readFile(path string, attempt int, done func([]byte, error)) {
	c.Resolves++
	c.Do(Request{Method: MethodGetBlockLocations, Path: path}, func(resp Response, err error) {
		if err != nil {
			done(nil, err)
			return
		}
		var data []byte
		var next func(i int)
		next = func(i int) {
			if i == len(resp.Locations) {
				done(data, nil)
				return
			}
			l := resp.Locations[i]
			dn := c.Datanode(l.Datanode)
			if dn == nil {
				done(nil, fmt.Errorf("namespace read %s: no datanode at %q", path, l.Datanode))
				return
			}
			if l.Length == 0 {
				next(i + 1)
				return
			}
			c.Hold(l.Block, l.Token)
			dn.Read(l.Block, l.Stamp, 0, l.Length, func(r model.Result) {
				c.Release(l.Block)
				if errors.Is(r.Err, model.ErrRejected) && attempt < MaxStaleRetries {
					c.StaleRetries++
					c.readFile(path, attempt+1, done)
					return
				}
				if r.Err != nil {
					done(nil, fmt.Errorf("namespace read %s block %d: %w", path, l.Block, r.Err))
					return
				}
				if data == nil && len(r.Data) > 0 {
					data = r.Data // the read's own buffer: a one-block file needs no copy
				} else {
					data = append(data, r.Data...)
				}
				next(i + 1)
			})
		}
		if h := c.afterResolve; h != nil {
			c.afterResolve = nil
			h(func() { next(0) })
			return
		}
		next(0)
	})
}

// WriteFile creates path with data cut into blocks of blockSize, writes
// each block to the datanode and completes the file with the stamps and
// lengths the datanode reported.
func (c *Client) WriteFile(path string, data []byte, blockSize int, datanode string, done func(error)) {
	n := 0
	if blockSize > 0 {
		n = (len(data) + blockSize - 1) / blockSize
	}
	c.Do(Request{Method: MethodCreate, Path: path, Blocks: n}, func(resp Response, err error) {
		if err != nil {
			done(err)
			return
		}
		if len(resp.Blocks) != n || len(resp.Tokens) != n {
			done(fmt.Errorf("namespace create %s: %d blocks for %d asked", path, len(resp.Blocks), n))
			return
		}
		dn := c.Datanode(datanode)
		if dn == nil {
			done(fmt.Errorf("namespace write %s: no datanode at %q", path, datanode))
			return
		}
		locs := make([]Location, n)
		var next func(i int)
		next = func(i int) {
			if i == n {
				c.Do(Request{Method: MethodComplete, Path: path, Done: locs}, func(_ Response, err error) { done(err) })
				return
			}
			chunk := data[i*blockSize : min(len(data), (i+1)*blockSize)]
			c.Hold(resp.Blocks[i], resp.Tokens[i])
			dn.Write(resp.Blocks[i], bytes.Clone(chunk), func(r model.Result) {
				c.Release(resp.Blocks[i])
				if r.Err != nil {
					done(fmt.Errorf("namespace write %s block %d: %w", path, resp.Blocks[i], r.Err))
					return
				}
				locs[i] = Location{Block: resp.Blocks[i], Stamp: r.Stamp, Length: r.Length}
				next(i + 1)
			})
		}
		next(0)
	})
}
