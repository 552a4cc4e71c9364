package properties

// ShrinkRPC removes faults and ops from a failing case while the same
// property still fails, within budget runs; it returns the smallest case,
// its run, and how many runs it took.
func ShrinkRPC(c RPCCase, r *RPCResult, budget int) (RPCCase, *RPCResult, int) {
	prop := r.Failure.Property
	runs := 0
	try := func(cand RPCCase) bool {
		if runs >= budget || cand.Validate() != nil {
			return false
		}
		runs++
		cr := RunRPC(cand)
		if cr.Failure != nil && cr.Failure.Property == prop && !cr.Failure.Unknown() {
			c, r = cand, cr
			return true
		}
		return false
	}
	for changed := true; changed && runs < budget; {
		changed = false
		for i := len(c.Faults) - 1; i >= 0; i-- {
			cand := c
			cand.Faults = append(append([]RPCFault(nil), c.Faults[:i]...), c.Faults[i+1:]...)
			changed = try(cand) || changed
		}
		// Ops: halves first, then one by one.
		for _, field := range []func(*RPCCase) *[]RPCOp{
			func(x *RPCCase) *[]RPCOp { return &x.Ops },
			func(x *RPCCase) *[]RPCOp { return &x.Live },
		} {
			for size := len(*field(&c)) / 2; size >= 1; size /= 2 {
				for i := 0; i+size <= len(*field(&c)); {
					cand := c
					ops := *field(&c)
					*field(&cand) = append(append([]RPCOp(nil), ops[:i]...), ops[i+size:]...)
					if try(cand) {
						changed = true
						continue
					}
					i += size
				}
			}
		}
	}
	return c, r, runs
}

// RPCTrace is a recorded rpc failure: the case, and what its run gave.
type RPCTrace struct {
	TraceHead         // Format: RPCTraceFormat
	Case      RPCCase `json:"rpc_case"`
}

// RPCTraceFormat names the file layout (and the code version: a change
// that alters an rpc run's events bumps it and re-records the corpus).
const RPCTraceFormat = "xceiver-rpc-trace/13"

// RecordRPC runs c and returns its trace.
func RecordRPC(c RPCCase) (RPCTrace, *RPCResult) {
	r := RunRPC(c)
	return RPCTraceOf(c, r), r
}

// RPCTraceOf is the trace of c, whose run gave r.
func RPCTraceOf(c RPCCase, r *RPCResult) RPCTrace {
	t := RPCTrace{TraceHead{Format: RPCTraceFormat, Events: r.Events, TraceHash: r.TraceHash}, c}
	if r.Failure != nil {
		t.Property, t.Message = r.Failure.Property, r.Failure.Message
	}
	return t
}

// ReadRPCTrace reads a trace file; a file that is not one is an error
// naming why.
func ReadRPCTrace(path string) (RPCTrace, error) {
	var t RPCTrace
	if err := readJSONTrace(path, "an rpc", &t); err != nil {
		return RPCTrace{}, err
	}
	if err := t.check(path, RPCTraceFormat, "rpc", t.Case.Seed, t.Case.Bug, t.Case.Validate); err != nil {
		return RPCTrace{}, err
	}
	return t, nil
}

// WriteRPCTrace writes t to path.
func WriteRPCTrace(path string, t RPCTrace) error {
	return writeJSONTrace(path, t)
}

// ReplayRPC re-runs a trace: nil when it fails the same property with the
// same event hash.
func ReplayRPC(t RPCTrace) (*RPCResult, error) {
	r := RunRPC(t.Case)
	got, msg := "", ""
	if r.Failure != nil {
		got, msg = r.Failure.Property, r.Failure.Message
	}
	return r, ReplayMismatch(got, msg, r.Events, r.TraceHash, t.TraceHead)
}

// CheckRPCSeed draws and runs one rpc seed, shrinking a failure.
func CheckRPCSeed(seed uint64, bug string, budget int) (RPCCase, *RPCResult, error) {
	c, err := DrawRPC(SeedSource(seed), seed, bug)
	if err != nil {
		return c, nil, err
	}
	r := RunRPC(c)
	if r.Failure == nil || r.Failure.Unknown() {
		return c, r, nil // a checker that gave up is reported as it is
	}
	c, r, _ = ShrinkRPC(c, r, budget)
	return c, r, nil
}
