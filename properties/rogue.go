package properties

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"xceiver/model"
)

// Rogue ops and closed clients: requests a well-behaved client never
// sends, made with the real client so that both ends of the exchange are
// under the properties.
//
//   - A rogue client (its own process) sends ops whose block token is bad:
//     missing, garbage, signed with another key, tampered with, expired,
//     or for another block, stamp or mode. Property "token": each is
//     refused with ERROR_ACCESS_TOKEN (the datanode checks the token
//     before it touches anything), and a valid token never is. The
//     history records a refusal as an op that changed nothing, so
//     linearizability checks that it did not.
//   - At quiescence a client may close with reads in flight (they finish
//     on their own connections, which are then closed, not cached: leak-
//     freedom checks it) and be used after it closed. Property
//     "closed-client": an op on a closed client fails with
//     ErrClientClosed and sends nothing.

// Properties of rogue ops and closed clients.
const (
	PropToken  = "token"         // bad tokens refused with ERROR_ACCESS_TOKEN, good ones never
	PropClosed = "closed-client" // ops on a closed client fail cleanly
)

// Bad token kinds (Op.Token).
const (
	TokenMissing    = "missing"
	TokenGarbage    = "garbage"
	TokenForged     = "forged"   // signed with another key
	TokenTampered   = "tampered" // a read-only grant with its mode byte widened
	TokenExpired    = "expired"
	TokenWrongBlock = "wrong-block"
	TokenWrongStamp = "wrong-stamp"
	TokenWrongMode  = "wrong-mode" // every mode but the one the op needs
	TokenLong       = "long"       // garbage as long as the protocol allows
)

// The wire protocol's bounds on a request's variable fields, as its
// specification states them (not read from model's constants, so that
// a changed bound shows): a field this long must be served.
const (
	specMaxClientName = 256
	specMaxToken      = 1024
)

// BadTokens lists every bad token kind.
var BadTokens = []string{TokenMissing, TokenGarbage, TokenForged, TokenTampered, TokenExpired,
	TokenWrongBlock, TokenWrongStamp, TokenWrongMode, TokenLong}

const rogueProcessName = "rogue"

// mintBad makes the token of kind for req at time now.
func mintBad(kind string, req model.Request, now time.Duration) []byte {
	key := model.DefaultTokenKey
	g := model.BlockToken{BlockID: req.BlockID, GenStamp: req.GenStamp, Modes: model.ModeFor(req.Op), Expiry: now + time.Hour}
	switch kind {
	case TokenMissing:
		return nil
	case TokenGarbage:
		return model.BlockContent(req.BlockID+uint64(now), model.TokenLen)
	case TokenLong:
		return model.BlockContent(req.BlockID+uint64(now), specMaxToken)
	case TokenForged:
		return model.IssueToken([]byte("not the datanode's key"), g)
	case TokenTampered:
		g.Modes = model.ModeRead
		tok := model.IssueToken(key, g)
		tok[16] = 0xf
		return tok
	case TokenExpired:
		// Minted when the request is built, it has expired by the time
		// the datanode reads it (time moves on in between).
		g.Expiry = now
	case TokenWrongBlock:
		g.BlockID++
	case TokenWrongStamp:
		g.GenStamp++
	case TokenWrongMode:
		g.Modes = (model.ModeRead | model.ModeWrite | model.ModeReplace | model.ModeDelete) &^ g.Modes
	}
	return model.IssueToken(key, g)
}

// drawRogue draws the rogue ops and the ops around clients' Close. It
// runs last, so the cases of earlier seeds keep their other fields.
func drawRogue(d drawer, cfg *Config, sc *Schedule) {
	idle := max(cfg.Keepalive, cfg.CacheExpiry)
	if d.chance(35, "rogue") {
		n := d.n(1, 6, "rogue_ops")
		for range n {
			op := drawOp(d, cfg, idle)
			op.Token = pick(d, "rogue_token", BadTokens...)
			sc.Rogue = append(sc.Rogue, op)
		}
	}
	if d.chance(20, "long_names") {
		cfg.ClientNameLen = specMaxClientName
	}
	for cl := 0; cl < cfg.Clients; cl++ {
		if !d.chance(25, "close_ops") {
			continue
		}
		for range d.n(0, 2, "close_inflight") {
			sc.Close = append(sc.Close, Op{Client: cl, Kind: OpRead, Block: uint64(d.n(1, int(cfg.MaxBlock), "close_block")),
				Len: int64(d.n(0, 4096, "close_len")), Stream: d.chance(30, "close_stream")})
		}
		for range d.n(1, 2, "close_after") {
			op := drawOp(d, cfg, idle)
			op.Client, op.Gap, op.AfterClose = cl, 0, true
			sc.Close = append(sc.Close, op)
		}
	}
}

func validateRogue(c *Case) error {
	if n := c.Config.ClientNameLen; n < 0 || n > specMaxClientName {
		return fmt.Errorf("client name length %d outside [0, %d]", n, specMaxClientName)
	}
	for _, op := range c.Schedule.Rogue {
		if !slices.Contains(BadTokens, op.Token) {
			return fmt.Errorf("rogue op with token %q: want one of %s", op.Token, strings.Join(BadTokens, ", "))
		}
	}
	for _, list := range [][]Op{c.Schedule.Ops, c.Schedule.Probe, c.Schedule.Live, c.Schedule.Close} {
		for _, op := range list {
			if op.Token != "" {
				return fmt.Errorf("a bad token (%q) on an op that is not rogue", op.Token)
			}
		}
	}
	for _, op := range c.Schedule.Close {
		if !op.AfterClose && op.Kind != OpRead {
			return fmt.Errorf("close op %s before the close: only reads are in flight at a close", op.Kind)
		}
	}
	return nil
}

// startRogue spawns the rogue client; its ops are one more worker of the
// workload.
func (h *harness) startRogue() {
	if len(h.c.Schedule.Rogue) == 0 {
		return
	}
	ch := &clientH{id: h.cfg.Clients + 1, name: rogueProcessName, stamps: make(map[uint64]uint64), reading: make([]uint64, 1),
		unsettled: []map[uint64]bool{make(map[uint64]bool)}, ops: [][]Op{h.c.Schedule.Rogue}}
	h.rogue = ch
	h.workersLeft++
	h.spawnClient(ch, func() { h.runOps(ch, 0, ch.ops[0], 0, streamWork) })
}

// rogueMint is the rogue client's token minter: the bad kind of the op in
// progress (its ops run one at a time, so a retry gets the same kind).
func (h *harness) rogueMint(req model.Request, now time.Duration) []byte {
	return mintBad(h.rogueToken, req, now)
}

// checkToken judges an op's answer by its token: a rogue op must be
// refused with ERROR_ACCESS_TOKEN, or fail in a way its faults explain
// (a reset, a crash); a valid token must never be refused. It reports
// whether it judged the op (a rogue one: nothing else applies).
func (h *harness) checkToken(ch *clientH, op Op, r model.Result) bool {
	refused := errors.Is(r.Err, model.ErrRejected) && r.Status == model.StatusErrorAccessToken
	if op.Token == "" {
		if refused {
			h.fail(PropToken, "%s: %s of block %d with a valid token refused: %v", ch.name, op.Kind, op.Block, r.Err)
		}
		return false
	}
	switch {
	case refused:
	case r.Err == nil:
		h.fail(PropToken, "%s: %s of block %d with a %s token succeeded (stamp %d, %d bytes)", ch.name, op.Kind, op.Block, op.Token, r.Stamp, r.Length)
	case errors.Is(r.Err, model.ErrRejected):
		h.fail(PropToken, "%s: %s of block %d with a %s token answered %v, not ERROR_ACCESS_TOKEN: %v", ch.name, op.Kind, op.Block, op.Token, r.Status, r.Err)
	case h.faultFree:
		h.fail(PropToken, "%s: %s of block %d with a %s token failed without an answer though no fault was injected: %v", ch.name, op.Kind, op.Block, op.Token, r.Err)
	}
	return true
}

// closeOps runs a client's close ops at quiescence: the reads in flight,
// Close, then the ops after it.
func (h *harness) closeOps(ch *clientH) {
	for _, op := range ch.closing {
		if !op.AfterClose {
			h.issue(ch, -1, op, false, nil)
		}
	}
	ch.cl.Close()
	for _, op := range ch.closing {
		if op.AfterClose {
			h.issue(ch, -1, op, false, nil)
		}
	}
}

// checkClosed judges an op issued after its client closed.
func (h *harness) checkClosed(ch *clientH, op Op, r model.Result) {
	if !errors.Is(r.Err, model.ErrClientClosed) {
		h.fail(PropClosed, "%s: %s of block %d after Close: want %v, got %v", ch.name, op.Kind, op.Block, model.ErrClientClosed, r.Err)
	}
}

// checkCacheTake judges what an op just started took from its client's
// peer cache (HDFS caches reader peers only): a read takes a cached peer
// if one has not expired (those that have are closed on the way), any
// other op takes none. cached and st0 are from just before the start,
// which begins the op at once.
func (h *harness) checkCacheTake(ch *clientH, op Op, cached int, st0 model.ClientStats) {
	if h.failure != nil {
		return
	}
	st := ch.cl.Stats()
	reused, expired := st.Reused-st0.Reused, st.Expired-st0.Expired
	switch {
	case op.Kind != OpRead && reused+expired > 0:
		h.fail(PropCache, "%s: a %s of block %d took a cached peer (%d reused, %d expired): only reads use the cache", ch.name, op.Kind, op.Block, reused, expired)
	case op.Kind == OpRead && cached > 0 && !op.AfterClose && reused != 1 && expired != cached:
		h.fail(PropCache, "%s: a read of block %d began with %d cached peers and took none (%d reused, %d expired)", ch.name, op.Block, cached, reused, expired)
	}
}
