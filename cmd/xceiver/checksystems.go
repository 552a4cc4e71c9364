package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"xceiver/model"
	"xceiver/properties"
	"xceiver/traces"
)

// checkSystem is one system check draws seeds for. check's one runner
// (runCheck) streams seeds, prints progress, tallies and summarises; a
// system only says how to check one seed.
type checkSystem struct {
	name string
	// share is the system's share of plain check's seeds, per mixTotal.
	share int
	// check checks seed with opt's bug and ignored properties: nil when
	// every property held; a failure comes shrunk (unless opt.noShrink),
	// its trace written into opt.out. Every 50th seed that passes runs
	// twice and must give the same trace hash (determinism). Other
	// seeds run without the hash, which nobody would compare; one that
	// fails runs again with it, to be saved, and must give the same
	// events.
	// It also returns the events the simulator processed in the seed's
	// drawn case (its first run): the seed's weight, which check sums.
	check func(seed uint64, opt checkOptions) (events uint64, f *checkFailure)
	// properties are what it checks, as named in failures.
	properties func() []string
	// codeVersion names the behaviour its traces replay against.
	codeVersion func() string
	// html says whether replay --html renders its traces.
	html bool
}

// mixTotal is what the systems' shares add up to.
const mixTotal = 100

// checkSystems are the systems in the order plain check's mix lists them.
// The datanode keeps most seeds: its cases are the richest (faults,
// hostile peers, corruption) and cheapest per seed after sc.
var checkSystems = []checkSystem{
	{name: "datanode", share: 74, check: checkDatanodeSeed, properties: propertyNames,
		codeVersion: func() string { return traces.CodeVersion }, html: true},
	{name: "rpc", share: 7, check: checkRPCSeed, properties: rpcPropertyNames,
		codeVersion: func() string { return properties.RPCTraceFormat }},
	{name: "sc", share: 7, check: checkSCSeed, properties: scPropertyNames,
		codeVersion: func() string { return properties.SCTraceFormat }},
	{name: "scenario", share: 12, check: checkScenarioSeed, properties: scenarioPropertyNames,
		codeVersion: func() string { return properties.ScenarioTraceFormat }},
}

// systemAll is --system's value for the mix.
const systemAll = "all"

func systemNames() []string {
	var names []string
	for _, s := range checkSystems {
		names = append(names, s.name)
	}
	return names
}

func lookupSystem(name string) *checkSystem {
	for i := range checkSystems {
		if checkSystems[i].name == name {
			return &checkSystems[i]
		}
	}
	return nil
}

// systemOf is the system seed runs under --system narrow: narrow itself,
// or (all) drawn from the seed by a hash of its own, so the draw of the
// seed's case is the same whichever way the seed was picked, and
// `check --seed S --seeds 1` runs S's system again.
func systemOf(seed uint64, narrow string) *checkSystem {
	if narrow != systemAll {
		return lookupSystem(narrow)
	}
	x := model.SplitMix64(seed ^ 0x73797374656d) // "system"
	k := int(x % mixTotal)
	for i := range checkSystems {
		if k < checkSystems[i].share {
			return &checkSystems[i]
		}
		k -= checkSystems[i].share
	}
	return &checkSystems[0]
}

// checkedSystems are the systems a check of --system narrow runs.
func checkedSystems(narrow string) []*checkSystem {
	if narrow != systemAll {
		return []*checkSystem{lookupSystem(narrow)}
	}
	var all []*checkSystem
	for i := range checkSystems {
		all = append(all, &checkSystems[i])
	}
	return all
}

// mixDescription is the mix in words, for help and README.
func mixDescription() string {
	var parts []string
	for _, s := range checkSystems {
		parts = append(parts, fmt.Sprintf("%s %d%%", s.name, s.share*100/mixTotal))
	}
	return strings.Join(parts, ", ")
}

// systemProperties are the properties checked under --system narrow, each
// once, in the systems' order.
func systemProperties(narrow string) []string {
	var props []string
	seen := map[string]bool{}
	for _, s := range checkedSystems(narrow) {
		for _, p := range s.properties() {
			if !seen[p] {
				seen[p] = true
				props = append(props, p)
			}
		}
	}
	return props
}

// systemCodeVersion names what the checked systems' traces replay
// against; merge refuses shards that disagree.
func systemCodeVersion(narrow string) string {
	var vs []string
	for _, s := range checkedSystems(narrow) {
		vs = append(vs, s.codeVersion())
	}
	return strings.Join(vs, "+")
}

// The systems' properties are properties' lists, which their traces'
// ignore entries are validated against: one list for both.
func rpcPropertyNames() []string      { return slices.Clone(properties.RPCProperties) }
func scPropertyNames() []string       { return slices.Clone(properties.SCProperties) }
func scenarioPropertyNames() []string { return slices.Clone(properties.ScenarioProperties) }

// ignoredOf is the part of --ignore that names properties a system
// checks: the rest means nothing to it, and a trace recording it would
// not load (a case's properties are validated).
func ignoredOf(ignore, checked []string) []string {
	var out []string
	for _, p := range ignore {
		if slices.Contains(checked, p) {
			out = append(out, p)
		}
	}
	return out
}

// knownProperty reports whether some system checks p (--ignore's list).
func knownProperty(p string) bool {
	for _, q := range systemProperties(systemAll) {
		if p == q {
			return true
		}
	}
	return properties.KnownProperty(p)
}

// shrinkBudget is the runs a failure's shrinking may take (0: none).
func shrinkBudget(opt checkOptions, budget int) int {
	if opt.noShrink {
		return 0
	}
	return budget
}

// determinismFailure reports two runs of one case that differ.
func determinismFailure(system string, seed uint64, events1 uint64, hash1 string, events2 uint64, hash2 string) *checkFailure {
	return &checkFailure{System: system, Seed: seed, Property: properties.PropDeterminism,
		Message: fmt.Sprintf("two runs of the case differ: %d events, hash %s, then %d events, hash %s", events1, hash1, events2, hash2)}
}

// runsTwice says whether seed, if it passes, runs again to compare its
// trace hash with the first run's (determinism): every 50th does.
func runsTwice(seed uint64) bool { return seed%50 == 0 }

// rerunFailure is the failure of a seed whose run again for its trace's
// hash (its first ran unhashed and failed) gave other events.
func rerunFailure(system string, seed uint64, prop, msg string, events1, events2 uint64) *checkFailure {
	return &checkFailure{System: system, Seed: seed, Property: properties.PropDeterminism,
		Message: fmt.Sprintf("two runs of the case differ: %d events, failing %s: %s, then %d events", events1, prop, msg, events2)}
}

// saveTrace writes a failure's trace into opt.out under name, and points
// f at it (or says why not).
func saveTrace(f *checkFailure, opt checkOptions, name string, write func(path string) error) {
	path := filepath.Join(opt.out, name)
	err := os.MkdirAll(opt.out, 0o755)
	if err == nil {
		err = write(path)
	}
	if err != nil {
		f.TraceError = err.Error()
		return
	}
	if st, err := os.Stat(path); err == nil {
		f.Bytes = st.Size()
	}
	f.Trace = path
}

// failureTraceName is the name check gives the trace of a failure of
// system at seed (with bug switched on, or ""): merge copies only a file
// of that name as the failure's trace.
func failureTraceName(system string, seed uint64, bug string) string {
	if system != "datanode" && system != "" { // "": a result from before the other systems
		return systemTraceName(system, seed, bug)
	}
	if bug != "" {
		return fmt.Sprintf("seed-%d-%s.trace", seed, bug)
	}
	return fmt.Sprintf("seed-%d.trace", seed)
}

// systemTraceName names the trace file of a failing seed of a system
// whose traces are JSON (rpc, sc, scenario).
func systemTraceName(system string, seed uint64, bug string) string {
	if bug != "" {
		return fmt.Sprintf("%s-seed-%d-%s.json", system, seed, bug)
	}
	return fmt.Sprintf("%s-seed-%d.json", system, seed)
}

// checkRPCSeed checks one seed of the rpc system (model/rpc and
// model/namespace end to end with the datanode).
func checkRPCSeed(seed uint64, opt checkOptions) (events uint64, _ *checkFailure) {
	c, err := properties.DrawRPC(properties.SeedSource(seed), seed, opt.bug)
	if err != nil {
		return 0, &checkFailure{System: "rpc", Seed: seed, Property: properties.PropHarness, Message: err.Error()}
	}
	c.Ignore = ignoredOf(opt.ignore, rpcPropertyNames())
	twice := runsTwice(seed)
	run := properties.RunRPCUnhashed
	if twice {
		run = properties.RunRPC
	}
	r := run(c)
	events = r.SimEvents
	if r.Failure == nil {
		if twice {
			if again := properties.RunRPC(c); again.TraceHash != r.TraceHash || again.Events != r.Events {
				return events, determinismFailure("rpc", seed, r.Events, r.TraceHash, again.Events, again.TraceHash)
			}
		}
		return events, nil
	}
	if !twice {
		hash, again := properties.RPCTraceHash(c)
		if again != r.Events {
			return events, rerunFailure("rpc", seed, r.Failure.Property, r.Failure.Message, r.Events, again)
		}
		r.TraceHash = hash
	}
	f := &checkFailure{System: "rpc", Seed: seed, OriginalProperty: r.Failure.Property,
		OriginalOps: len(c.Ops) + len(c.Live), OriginalFaults: len(c.Faults)}
	if !r.Failure.Unknown() { // a checker that gave up is reported as it is
		c, r, f.ShrinkRuns = properties.ShrinkRPC(c, r, shrinkBudget(opt, properties.ShrinkBudget))
	}
	f.Property, f.Message, f.Events = r.Failure.Property, r.Failure.Message, r.Events
	f.Ops, f.Faults = len(c.Ops)+len(c.Live), len(c.Faults)
	t := properties.RPCTraceOf(c, r)
	saveTrace(f, opt, systemTraceName("rpc", seed, opt.bug), func(path string) error { return properties.WriteRPCTrace(path, t) })
	return events, f
}

// scShrinkBudget bounds the runs spent shrinking one failing sc seed.
const scShrinkBudget = 300

// checkSCSeed checks one seed of the short-circuit system
// (model/shortcircuit with two datanodes on the host).
func checkSCSeed(seed uint64, opt checkOptions) (events uint64, _ *checkFailure) {
	c, err := properties.DrawSC(properties.SeedSource(seed), seed, opt.bug)
	if err != nil {
		return 0, &checkFailure{System: "sc", Seed: seed, Property: properties.PropHarness, Message: err.Error()}
	}
	c.Ignore = ignoredOf(opt.ignore, scPropertyNames())
	twice := runsTwice(seed)
	run := properties.RunSCUnhashed
	if twice {
		run = properties.RunSC
	}
	r := run(c)
	events = r.SimEvents
	if r.Property == "" {
		if twice {
			if again := properties.RunSC(c); again.TraceHash != r.TraceHash || again.Events != r.Events {
				return events, determinismFailure("sc", seed, r.Events, r.TraceHash, again.Events, again.TraceHash)
			}
		}
		return events, nil
	}
	if !twice {
		again := properties.RunSC(c)
		if again.Events != r.Events || again.SimEvents != r.SimEvents {
			return events, rerunFailure("sc", seed, r.Property, r.Message, r.Events, again.Events)
		}
		r.TraceHash = again.TraceHash
	}
	ops, faults := scSize(c)
	f := &checkFailure{System: "sc", Seed: seed, OriginalProperty: r.Property, OriginalOps: ops, OriginalFaults: faults}
	if r.Property != properties.PropHarness {
		c, r = properties.ShrinkSC(c, r, shrinkBudget(opt, scShrinkBudget))
	}
	f.Property, f.Message, f.Events = r.Property, r.Message, r.Events
	f.Ops, f.Faults = scSize(c)
	t := properties.SCTraceOf(c, r)
	saveTrace(f, opt, systemTraceName("sc", seed, opt.bug), func(path string) error { return properties.WriteSCTrace(path, t) })
	return events, f
}

// scSize counts an sc case's ops and its faults (the ops that are not
// reads or block changes).
func scSize(c properties.SCCase) (ops, faults int) {
	for _, op := range c.Ops {
		switch op.Op {
		case "read", "replace", "append", "delete":
			ops++
		default:
			faults++
		}
	}
	return ops, faults
}

// systemBugNames are the catalogued bugs of a system.
func systemBugNames(system string) []string {
	switch system {
	case "rpc":
		return rpcBugNames()
	case "sc":
		return scBugNames()
	case "scenario":
		return scenarioBugNames()
	}
	return bugNames()
}

func scenarioBugNames() []string {
	var names []string
	for _, b := range properties.ScenarioBugs {
		names = append(names, b.Name)
	}
	return names
}

// checkScenarioSeed checks one seed of the scenario system: a small run
// of a scenario that run, validate and bench drive (properties/scenario.go).
func checkScenarioSeed(seed uint64, opt checkOptions) (events uint64, _ *checkFailure) {
	c, err := properties.DrawScenario(properties.SeedSource(seed), seed, opt.bug)
	if err != nil {
		return 0, &checkFailure{System: "scenario", Seed: seed, Property: properties.PropHarness, Message: err.Error()}
	}
	c.Ignore = ignoredOf(opt.ignore, scenarioPropertyNames())
	twice := runsTwice(seed)
	run := properties.RunScenarioUnhashed
	if twice {
		run = properties.RunScenario
	}
	r := run(c)
	events = r.SimEvents
	if r.Property == "" {
		if twice {
			if again := properties.RunScenario(c); again.TraceHash != r.TraceHash || again.Events != r.Events {
				return events, determinismFailure("scenario", seed, r.Events, r.TraceHash, again.Events, again.TraceHash)
			}
		}
		return events, nil
	}
	if !twice {
		again := properties.RunScenario(c)
		if again.Events != r.Events || again.SimEvents != r.SimEvents {
			return events, rerunFailure("scenario", seed, r.Property, r.Message, r.Events, again.Events)
		}
		r.TraceHash = again.TraceHash
	}
	f := &checkFailure{System: "scenario", Seed: seed, OriginalProperty: r.Property, OriginalOps: scenarioOps(c)}
	if r.Property != properties.PropHarness {
		c, r, f.ShrinkRuns = properties.ShrinkScenario(c, r, shrinkBudget(opt, properties.ShrinkBudget))
	}
	f.Property, f.Message, f.Events, f.Ops = r.Property, r.Message, r.Events, scenarioOps(c)
	t := properties.ScenarioTraceOf(c, r)
	saveTrace(f, opt, systemTraceName("scenario", seed, opt.bug), func(path string) error { return properties.WriteScenarioTrace(path, t) })
	return events, f
}

// scenarioOps is how many ops a scenario case makes (an rpc window's
// calls are not known before it runs: its clients' threads count).
func scenarioOps(c properties.ScenarioCase) int {
	switch c.Scenario {
	case properties.ScenarioParallelRead:
		return c.Blocks * c.Clients * c.Ops
	case properties.ScenarioTCPPattern:
		return c.Ops
	case properties.ScenarioRPC:
		return c.Clients * c.Threads
	}
	return c.Clients * c.Ops
}

// bugOf names the kind of a system's bug, for messages.
func bugOf(system string) string {
	switch system {
	case "rpc":
		return "an rpc bug"
	case "sc":
		return "a short-circuit bug"
	}
	return "a " + system + " bug"
}

func rpcBugNames() []string {
	var names []string
	for _, b := range properties.RPCBugs {
		names = append(names, b.Name)
	}
	return names
}

func scBugNames() []string {
	var names []string
	for _, b := range properties.SCBugs {
		names = append(names, b.Name)
	}
	return names
}
