package properties

import (
	"strings"
	"testing"
	"time"

	"xceiver/model"
)

// The rogue client's ops have a row of the history to themselves (the
// HTML view's lanes, the history's ClientId): a rogue numbered as a real
// client would put its refused ops among that client's. Its ops are the
// ones refused with ERROR_ACCESS_TOKEN (token: a valid token never is).
func TestRogueHasARowOfItsOwn(t *testing.T) {
	var c Case
	for s := uint64(1); ; s++ {
		d, err := Draw(SeedSource(s), s, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Schedule.Rogue) > 0 && len(d.Schedule.Faults) == 0 {
			c = d
			break
		}
	}
	r := Run(c, Options{})
	if r.Failure != nil {
		t.Fatalf("seed %d as drawn: %v", c.Seed, r.Failure)
	}
	rogue, others := map[int]bool{}, map[int]bool{}
	for _, op := range r.History {
		in, out := op.Input.(LinInput), op.Output.(LinOutput)
		switch {
		case in.Kind == kInit:
		case out.Outcome == outRejected && out.Status == model.StatusErrorAccessToken:
			rogue[op.ClientId] = true
		default:
			others[op.ClientId] = true
		}
	}
	if len(rogue) != 1 {
		t.Fatalf("seed %d: the rogue's refused ops are on rows %v: want one row", c.Seed, rogue)
	}
	for row := range rogue {
		if others[row] {
			t.Errorf("seed %d: the rogue's row %d holds other clients' ops too", c.Seed, row)
		}
	}
}

// Each bad token is refused for the reason its kind names, for every op;
// a tampered one claims every mode, the op's among them, on a signature
// that granted only reads: only the signature refuses it.
func TestBadTokensRefusedForTheirReason(t *testing.T) {
	const now = time.Second
	says := map[string]string{
		TokenMissing:    "no token",
		TokenGarbage:    "bad signature",
		TokenLong:       "token of 1024 bytes",
		TokenForged:     "bad signature",
		TokenTampered:   "bad signature",
		TokenExpired:    "expired",
		TokenWrongBlock: "used for block",
		TokenWrongStamp: "used for block",
		TokenWrongMode:  "token grants",
	}
	for _, op := range []model.Op{model.OpReadBlock, model.OpWriteBlock, model.OpAppendBlock, model.OpReplaceBlock, model.OpDeleteBlock} {
		req := model.Request{Op: op, BlockID: 7, GenStamp: 1001}
		for _, kind := range BadTokens {
			tok := mintBad(kind, req, now)
			err := model.CheckToken(model.DefaultTokenKey, tok, req.BlockID, req.GenStamp, model.ModeFor(op), now)
			if err == nil || !strings.Contains(err.Error(), says[kind]) {
				t.Errorf("%s token for %v: %v, want a refusal saying %q", kind, op, err, says[kind])
			}
		}
		g, _, err := model.DecodeToken(mintBad(TokenTampered, req, now))
		if err != nil || g.Modes != model.ModeRead|model.ModeWrite|model.ModeReplace|model.ModeDelete {
			t.Errorf("tampered token for %v grants %v (%v): want every mode", op, g.Modes, err)
		}
	}
}
