package mutation

import (
	"slices"
	"strings"
	"testing"
)

const fixture = `package p

type E struct{}

func (E) Error() string { return "e" }

func f(a, b int, ok bool, xs []int) (int, error) {
	if a < b && ok {
		return a + 1, nil
	}
	var err error = E{}
	if err != nil {
		return 0, err
	}
	for i := 0; i < len(xs); i++ {
		if !ok {
			break
		}
		a -= xs[i]
	}
	g(a, b)
	b = a * 2
	defer g(b, a)
	return min(a, b), E{}
}

func g(x, y int) {}

func h(s string, buf [4]byte) string {
	return s + "x" + string(buf[:])
}
`

type want struct {
	op       string
	line     int
	old, new string
}

// Every operator on a fixture: the mutants, in order, and each compiles.
func TestOperatorsOnFixture(t *testing.T) {
	ms, src := enumerateSource(t, fixture)
	wants := []want{
		{"boundary", 8, "<", "<="},
		{"negate", 8, "<", ">="},
		{"logical", 8, "&&", "||"},
		{"negate", 8, "ok", "!ok"},
		{"arith", 9, "+", "-"},
		{"off-by-one", 9, "1", "2"},
		{"off-by-one", 9, "1", "0"},
		{"drop-error", 12, "err != nil", "err != nil && false"},
		{"negate", 12, "!=", "=="},
		{"off-by-one", 13, "0", "1"},
		{"drop-error", 13, "err", "nil"},
		{"off-by-one", 15, "0", "1"},
		{"boundary", 15, "<", "<="},
		{"negate", 15, "<", ">="},
		{"remove-stmt", 15, "i++", ""},
		{"negate", 16, "!", ""},
		{"remove-stmt", 17, "break", ""},
		{"remove-stmt", 19, "a -= xs[i]", "_ = xs[i]"},
		{"arith", 19, "-=", "+="},
		{"remove-call", 21, "g(a, b)", ""},
		{"swap-args", 21, "a, b", "b, a"},
		{"remove-stmt", 22, "b ", "_ "},
		{"arith", 22, "*", "/"},
		{"off-by-one", 22, "2", "3"},
		{"off-by-one", 22, "2", "1"},
		{"remove-stmt", 23, "defer g(b, a)", ""},
		{"swap-args", 23, "b, a", "a, b"},
		// min is commutative: no swap. Strings are not numbers: no arith
		// in h; an array length is a type, not a value.
		{"drop-error", 24, "E{}", "nil"},
	}
	var got []want
	for _, m := range ms {
		got = append(got, want{m.Operator, m.Line, m.Old, m.New})
		if err := checks(m.Apply(src)); err != nil {
			t.Errorf("%v does not compile: %v", m, err)
		}
	}
	if !slices.Equal(got, wants) {
		t.Errorf("mutants:\n got %v\nwant %v", got, wants)
	}
	for _, op := range Operators {
		if !slices.ContainsFunc(ms, func(m Mutant) bool { return m.Operator == op }) {
			t.Errorf("no %s mutant in the fixture", op)
		}
	}
}

func TestApplyAndDiff(t *testing.T) {
	ms, src := enumerateSource(t, fixture)
	m := ms[slices.IndexFunc(ms, func(m Mutant) bool { return m.Operator == OpSwapArgs })]
	out := string(m.Apply(src))
	if !strings.Contains(out, "\n\tg(b, a)\n\tb = a * 2\n") || strings.Count(out, "\n") != strings.Count(fixture, "\n") {
		t.Errorf("applying %v:\n%s", m, out)
	}
	wantDiff := "- p/p.go:21: g(a, b)\n+ p/p.go:21: g(b, a)\n"
	if d := m.Diff(src); d != wantDiff {
		t.Errorf("diff %q, want %q", d, wantDiff)
	}
	if m.Func != "f" {
		t.Errorf("func %q, want f", m.Func)
	}
}

// IDs name a mutant, not a position: moving code keeps them; identical
// edits in one function get different IDs.
func TestIDsSurviveUnrelatedEdits(t *testing.T) {
	a, _ := enumerateSource(t, fixture)
	moved := strings.Replace(fixture, "type E struct{}\n", "type E struct{}\n\n// a comment that moves every line\nvar unrelated = \"x\"\n", 1)
	b, _ := enumerateSource(t, moved)
	if len(a) != len(b) {
		t.Fatalf("%d mutants, then %d", len(a), len(b))
	}
	ids := map[string]bool{}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Line+3 != b[i].Line {
			t.Errorf("%v became %v", a[i], b[i])
		}
		if ids[a[i].ID] {
			t.Errorf("duplicate ID %s", a[i].ID)
		}
		ids[a[i].ID] = true
	}
}

// An ID is keyed by its line: a same edit added on an earlier line of the
// function leaves a later mutant's ID as it was (with the edit alone as
// key, the ordinals shifted, and the added mutant took the later one's
// ID, so an equivalent.txt entry came to name it), while an edit of the
// mutated line itself leaves the old ID naming no mutant.
func TestIDKeyedByLine(t *testing.T) {
	const before = `package p

func f(a, b int) int {
	if a > b {
		b++
	}
	return a + b
}
`
	// arith + → - of the return line, the mutant an entry would name.
	ret := func(src string, line string) (Mutant, map[string]Mutant) {
		ms, b := enumerateSource(t, src)
		byID := map[string]Mutant{}
		var found []Mutant
		for _, m := range ms {
			byID[m.ID] = m
			if m.Operator == OpArith && m.Old == "+" && lineText(b, m.Start, m.End) == line {
				found = append(found, m)
			}
		}
		if len(found) != 1 {
			t.Fatalf("%d arith mutants of %q in\n%s", len(found), line, src)
		}
		return found[0], byID
	}
	m, _ := ret(before, "return a + b")

	inserted := strings.Replace(before, "\tif a > b {", "\ta = a + 1\n\tif a > b {", 1)
	m2, byID := ret(inserted, "return a + b")
	if m2.ID != m.ID {
		t.Errorf("a + added on an earlier line moved %v to %v", m, m2)
	}
	if other, ok := byID[m.ID]; ok && other.Line != m2.Line {
		t.Errorf("%s now names the added line's mutant %v", m.ID, other)
	}

	edited := strings.Replace(before, "return a + b", "return a + b + 0", 1)
	ms, _ := enumerateSource(t, edited)
	for _, x := range ms {
		if x.ID == m.ID {
			t.Errorf("%s still names %v after its line changed", m.ID, x)
		}
	}
	// Re-indenting the line keeps it.
	wrapped := strings.Replace(before, "\treturn a + b\n", "\t{\n\t\treturn a + b\n\t}\n", 1)
	if m3, _ := ret(wrapped, "return a + b"); m3.ID != m.ID {
		t.Errorf("re-indenting moved %v to %v", m, m3)
	}
}

func TestSampleAndShard(t *testing.T) {
	ms, _ := enumerateSource(t, fixture)
	s1, s2, s3 := Sample(ms, 10, 7), Sample(ms, 10, 7), Sample(ms, 10, 8)
	if len(s1) != 10 || !slices.EqualFunc(s1, s2, func(a, b Mutant) bool { return a.ID == b.ID }) {
		t.Fatalf("same seed, different samples")
	}
	if slices.EqualFunc(s1, s3, func(a, b Mutant) bool { return a.ID == b.ID }) {
		t.Errorf("seeds 7 and 8 drew the same sample")
	}
	if !slices.IsSortedFunc(s1, func(a, b Mutant) int { return a.Start - b.Start }) {
		t.Errorf("sample not in source order")
	}
	// Dropping mutants outside a sample leaves the sample as it was.
	var fewer []Mutant
	for _, m := range ms {
		if slices.ContainsFunc(s1, func(x Mutant) bool { return x.ID == m.ID }) || m.Line%2 == 0 {
			fewer = append(fewer, m)
		}
	}
	if s4 := Sample(fewer, 10, 7); !slices.EqualFunc(s1, s4, func(a, b Mutant) bool { return a.ID == b.ID }) {
		t.Errorf("removing unsampled mutants changed the sample")
	}
	// A sample is a prefix of the draw order.
	ord := Order(ms, 7)
	for i, m := range ord[:10] {
		if !slices.ContainsFunc(s1, func(x Mutant) bool { return x.ID == m.ID }) {
			t.Errorf("the %d-th drawn mutant %v is not in the sample", i, m)
		}
	}
	if len(ord) != len(ms) {
		t.Errorf("order has %d of %d", len(ord), len(ms))
	}
	if len(Sample(ms, 0, 1)) != len(ms) || len(Sample(ms, len(ms)+5, 1)) != len(ms) {
		t.Errorf("sample 0 or too large should keep all")
	}
	seen := map[string]int{}
	for i := 1; i <= 3; i++ {
		for _, m := range Shard(ms, i, 3) {
			seen[m.ID]++
		}
	}
	if len(seen) != len(ms) {
		t.Errorf("shards cover %d of %d", len(seen), len(ms))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s in %d shards", id, n)
		}
	}
}

func TestParseEquivalents(t *testing.T) {
	m, err := ParseEquivalents("# comment\n\n0123456789 why it is equivalent\n")
	if err != nil || m["0123456789"] != "why it is equivalent" || len(m) != 1 {
		t.Errorf("%v %v", m, err)
	}
	// Ten characters that are not a mutant's ID (ten lower-case hex
	// digits) were taken, and named no mutant.
	for _, bad := range []string{"0123456789", "short reason", "0123456789   ", "zzzzzzzzzz reason", "012345678A reason", "ABCDEF0123 reason", "012345678g reason"} {
		if _, err := ParseEquivalents(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseEquivalents(defaultEquivalents); err != nil {
		t.Errorf("the committed list: %v", err)
	}
	// A bad line is quoted cut short: it was echoed whole (5 MB of it).
	if _, err := ParseEquivalents(strings.Repeat("x", 1<<20)); err == nil || len(err.Error()) > 200 {
		t.Errorf("a 1 MiB line: %d bytes of error, want a short one", len(err.Error()))
	}
}

// Mutants in the body of an `if x.Bugs.Name {` change only a catalogued
// bug's re-creation; those in its condition, or under a negated switch,
// change the code under test.
func TestBugOnly(t *testing.T) {
	src := `package p

type bugs struct{ Leak, Slow bool }
type cfg struct{ Bugs bugs }

func f(c cfg, n int) int {
	if c.Bugs.Leak {
		n++
	}
	if n > 2 && (c.Bugs.Slow) {
		n--
	}
	if !c.Bugs.Slow {
		n += 3
	}
	if c.Bugs.Leak || n > 1 {
		n *= 2
	}
	return n
}
`
	ms, _ := enumerateSource(t, src)
	var bugOnly, other []string
	for _, m := range ms {
		s := m.Operator + " " + m.Old + "→" + m.New
		if m.BugOnly {
			bugOnly = append(bugOnly, s)
		} else {
			other = append(other, s)
		}
	}
	want := []string{"remove-stmt n++→", "remove-stmt n--→"}
	if !slices.Equal(bugOnly, want) {
		t.Errorf("bug-only mutants %q, want %q", bugOnly, want)
	}
	for _, s := range []string{"negate c.Bugs.Leak→!c.Bugs.Leak", "remove-stmt n += 3→_ = 3", "remove-stmt n *= 2→_ = 2"} {
		if !slices.Contains(other, s) {
			t.Errorf("no mutant %q outside the bug branches (have %q)", s, other)
		}
	}
}

// A Process.Log call is not dropped (a trace line only), but its
// arguments are still swapped; another type's Log is dropped as any call.
func TestTraceLogNotDropped(t *testing.T) {
	src := `package p

type Process interface{ Log(kind string, kv ...any) }
type other struct{}

func (other) Log(kind string, kv ...any) {}

func f(p Process, o other, err string) {
	p.Log("kind", "err", err)
	o.Log("kind", "err", err)
}
`
	ms, _ := enumerateSource(t, src)
	var got []string
	for _, m := range ms {
		got = append(got, m.Operator+" "+m.Old)
	}
	want := []string{
		`swap-args "err", err`,
		`remove-call o.Log("kind", "err", err)`,
		`swap-args "err", err`,
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("no mutant %q (have %q)", w, got)
		}
	}
	if slices.Contains(got, `remove-call p.Log("kind", "err", err)`) {
		t.Errorf("Process.Log dropped: %q", got)
	}
}
