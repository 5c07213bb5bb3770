package realistic

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// verbForms holds the inflections the sentence templates need.
type verbForms struct{ base, s, past, pp, ing string }

// wordClass lets a near-duplicate edit swap a word for another of the same
// form, so an edited paragraph still reads as English.
type wordClass uint8

const (
	wcNone wordClass = iota
	wcNoun
	wcNouns
	wcAdj
	wcAdv
	wcVerb
	wcVerbS
	wcVerbD
	wcVerbG
)

type vocabulary struct {
	nouns, plurals                        []string
	verbs                                 []verbForms
	adjs, advs, first, last, places, tech []string
	months, days, preps                   []string
	byClass                               map[wordClass][]string
	classOf                               map[string]wordClass
	distinct                              int
}

// vocab is built once and never written afterwards.
var vocab = buildVocab()

func buildVocab() *vocabulary {
	v := &vocabulary{byClass: map[wordClass][]string{}, classOf: map[string]wordClass{}}
	mass := map[string]bool{}
	for _, w := range fields(massNounList) {
		mass[w] = true
	}
	seen := map[string]bool{}
	for _, w := range fields(nounList) {
		if seen[w] {
			continue
		}
		seen[w] = true
		v.nouns = append(v.nouns, w)
		p := plural(w)
		if mass[w] {
			p = w
		}
		v.plurals = append(v.plurals, p)
	}
	irr := map[string][2]string{}
	for _, t := range strings.FieldsFunc(irregularVerbs, func(r rune) bool { return r == '|' || r == '\n' }) {
		f := fields(t)
		if len(f) == 3 {
			irr[f[0]] = [2]string{f[1], f[2]}
		}
	}
	dbl := map[string]bool{}
	for _, w := range fields(doublingVerbs) {
		dbl[w] = true
	}
	seen = map[string]bool{}
	for _, w := range fields(verbList) {
		if seen[w] {
			continue
		}
		seen[w] = true
		v.verbs = append(v.verbs, inflect(w, irr, dbl))
	}
	v.adjs = uniq(fields(adjectiveList))
	v.advs = uniq(fields(adverbList))
	v.first = uniq(fields(firstNames))
	v.last = uniq(fields(lastNames))
	v.places = uniq(fields(placeList))
	v.tech = uniq(fields(techTerms))
	v.months = fields(monthList)
	v.days = fields(dayList)
	v.preps = fields(prepList)

	add := func(c wordClass, ws ...string) {
		for _, w := range ws {
			if _, ok := v.classOf[w]; ok {
				continue // ambiguous words keep their first class
			}
			v.classOf[w] = c
			v.byClass[c] = append(v.byClass[c], w)
		}
	}
	add(wcNoun, v.nouns...)
	add(wcNouns, v.plurals...)
	add(wcAdj, v.adjs...)
	add(wcAdv, v.advs...)
	for _, f := range v.verbs {
		add(wcVerb, f.base)
		add(wcVerbS, f.s)
		add(wcVerbD, f.past)
		add(wcVerbG, f.ing)
	}
	all := map[string]bool{}
	for w := range v.classOf {
		all[strings.ToLower(w)] = true
	}
	for _, l := range [][]string{v.first, v.last, v.places, v.tech, v.months, v.days, v.preps} {
		for _, w := range l {
			all[strings.ToLower(w)] = true
		}
	}
	for _, f := range v.verbs {
		all[f.pp] = true
	}
	v.distinct = len(all)
	return v
}

func uniq(ws []string) []string {
	seen := map[string]bool{}
	out := ws[:0:0]
	for _, w := range ws {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

func isVowel(b byte) bool { return strings.IndexByte("aeiou", b) >= 0 }

func plural(w string) string {
	switch w {
	case "child":
		return "children"
	case "person":
		return "people"
	case "woman":
		return "women"
	case "chairman":
		return "chairmen"
	case "mouse":
		return "mice"
	case "foot":
		return "feet"
	case "tooth":
		return "teeth"
	case "analysis":
		return "analyses"
	case "criterion":
		return "criteria"
	case "hypothesis":
		return "hypotheses"
	case "crisis":
		return "crises"
	case "leaf":
		return "leaves"
	case "knife":
		return "knives"
	case "wife":
		return "wives"
	case "shelf":
		return "shelves"
	case "hero":
		return "heroes"
	case "potato":
		return "potatoes"
	case "tomato":
		return "tomatoes"
	case "series", "fish", "people", "index":
		if w == "index" {
			return "indexes"
		}
		return w
	}
	n := len(w)
	switch {
	case strings.HasSuffix(w, "s") || strings.HasSuffix(w, "x") || strings.HasSuffix(w, "z") ||
		strings.HasSuffix(w, "ch") || strings.HasSuffix(w, "sh"):
		return w + "es"
	case n > 1 && w[n-1] == 'y' && !isVowel(w[n-2]):
		return w[:n-1] + "ies"
	}
	return w + "s"
}

func inflect(w string, irr map[string][2]string, dbl map[string]bool) verbForms {
	f := verbForms{base: w}
	n := len(w)
	switch {
	case w == "go" || w == "do" || w == "undo":
		f.s = w + "es"
	case strings.HasSuffix(w, "s") || strings.HasSuffix(w, "x") || strings.HasSuffix(w, "z") ||
		strings.HasSuffix(w, "ch") || strings.HasSuffix(w, "sh"):
		f.s = w + "es"
	case n > 1 && w[n-1] == 'y' && !isVowel(w[n-2]):
		f.s = w[:n-1] + "ies"
	default:
		f.s = w + "s"
	}
	stem := w
	if dbl[w] {
		stem = w + w[n-1:]
	}
	switch {
	case strings.HasSuffix(w, "ie"):
		f.ing = w[:n-2] + "ying"
	case strings.HasSuffix(w, "e") && !strings.HasSuffix(w, "ee") && !strings.HasSuffix(w, "ye") && !strings.HasSuffix(w, "oe"):
		f.ing = w[:n-1] + "ing"
	default:
		f.ing = stem + "ing"
	}
	if p, ok := irr[w]; ok {
		f.past, f.pp = p[0], p[1]
		return f
	}
	switch {
	case strings.HasSuffix(w, "e"):
		f.past = w + "d"
	case n > 1 && w[n-1] == 'y' && !isVowel(w[n-2]):
		f.past = w[:n-1] + "ied"
	default:
		f.past = stem + "ed"
	}
	f.pp = f.past
	return f
}

// sentenceTemplates are expanded slot by slot; the slots are documented in
// (*prose).slot. Statements and questions are kept apart so user turns can
// ask and assistant turns can answer.
var statementTemplates = []string{
	"The {A} {N} {Vd} the {N} {P} the {A} {N}.",
	"{Name} {Vd} that the {N} {Mod} {V} {R} {P} the {N}.",
	"If the {N} {Vs} {R}, we {Mod} {V} the {A} {N} before {Vg} the {Ns}.",
	"I {Vd} {a} {A} {N} and {Vd} that it {Vs} {R}.",
	"There are {Num} {A} {Ns} in the {N}, and {Small} of them {V} the {N}.",
	"Before we {V} the {N}, let's {V} the {A} {Ns} {P} {Place}.",
	"Most {Ns} {V} {R}, but the {A} ones {V} the {N} {P} {a} {N}.",
	"According to the {N}, the {T} {N} {Vd} {Pct} percent {P} {Month}.",
	"It seems that {a} {A} {N} {Vs} the {N} whenever {Name} {Vs} the {Ns}.",
	"The {N} is {A}; however, the {N} {Vs} {R} {P} the {A} {N}.",
	"My {N} {Vd} the {Ns}, which {Vd} {P} the {A} {N} {R}.",
	"Once the {Ns} {V}, the {N} {Mod} {V} {a} {A} {N}.",
	"{Name} and {Name} {Vd} the {A} {N} {P} {Place} last {Day}.",
	"In short, the {N} {Vs} {R} and the {Ns} {V} {P} the {N}.",
	"Let me {V} the {Ns} first, then I will {V} the {A} {N}.",
	"Without the {N}, the {Ns} {Mod} {V} {R}.",
	"{Vg} the {N} {Vs} the {A} {N} {P} the {N}.",
	"The {Ns} have been {Vn} {R}, so the {N} is {A} again.",
	"We {Vd} the {T} {N} on {Day} and it has {Vn} {Num} {Ns} since then.",
	"The {A} {N} was {Vn} by {Full} {P} the {N}.",
	"{R}, the {N} {Vd} {P} the {A} {Ns}, which is {A}.",
	"I think we {Mod} {V} the {N} instead of {Vg} the {A} {Ns}.",
	"The team in {Place} {Vd} {Num} {Ns} and {Vd} the {N} {R}.",
	"After {Vg} the {Ns}, {Name} {Vd} the {N} {P} the {A} {N}.",
	"The {N} {Mod} not {V} the {Ns} unless the {N} is {A}.",
	"As far as I can tell, the {Ns} {V} the {A} {N} {R}.",
	"Our {A} {N} {Vs} {P} {Num} {Ns} every {Day}.",
	"That {N} {Vd} the {A} {N}, and nobody {Vd} the {Ns} until {Month}.",
	"The {T} {N} {Vs} {a} {A} {N} whenever the {Ns} are {A}.",
	"Even though the {N} is {A}, the {Ns} still {V} {R}.",
	"We need to {V} the {Ns} so that the {N} does not {V} the {A} {N}.",
	"{Name} asked whether the {A} {N} {Mod} {V} the {T} {Ns}.",
	"The {N} between the {N} and the {N} is {A} but {A}.",
	"Each {N} {Vs} its own {N}, which {Vs} the {A} {Ns} {R}.",
	"So far the {Ns} {P} {Place} have {Vn} {R}, and the {N} is {A}.",
	"The {T} {N} took {Num} {Unit} to {V} the {A} {Ns}.",
	"The {A} {N} \u2014 the one {Name} {Vd} \u2014 still {Vs} the {Ns}.",
	"{Name} called it \u201c{A} {N}\u201d, and the name {Vd}.",
	"We {Vd} the {N} \u2026 and then the {Ns} {Vd} {R}.",
	"When {Name} {Vd} the {N}, the {Ns} {Vd} {P} the {T} {N}.",
	"The {A} {Ns} are {A}, but the {N} {Vs} {a} {A} {N} {P} {Month}.",
	"One {N} {Vd} {Num} {Ns} {P} the {N}, which {Vd} the {A} {N}.",
	"This {N} {Vs} the {A} {N} and {Vs} the {Ns} {P} the {T} {N}.",
	"Version {Ver} {Vd} the {A} {N}, so the {Ns} now {V} {R}.",
	"We {Vd} {P} the {N} for {Num} {Unit} before the {Ns} {Vd}.",
}

var questionTemplates = []string{
	"Could you {V} the {Ns} {P} the {A} {N} when you get a chance?",
	"Do you know why the {T} {N} {Vs} the {Ns}?",
	"Why does the {N} {V} the {Ns} {P} the {T} {N}?",
	"Can we {V} the {A} {N} before {Name} {Vs} the {Ns}?",
	"What happens if the {N} {Vs} the {A} {N} {P} {Place}?",
	"Is the {A} {N} still {Vg} the {Ns}, or did it {V} {R}?",
	"How should we {V} the {Ns} {P} the {T} {N}?",
	"Would it make sense to {V} the {N} and {V} the {A} {Ns}?",
	"Which {N} {Vs} the {A} {Ns} {P} the {N}?",
	"Did {Name} {V} the {T} {N} {P} {Month}?",
	"Where do the {A} {Ns} {V} after the {N} {Vs}?",
	"Should I {V} the {Ns} {R} or wait for the {A} {N}?",
}

var units = []string{"seconds", "minutes", "hours", "days", "weeks", "milliseconds", "requests", "retries"}
var modals = []string{"should", "could", "will", "might", "must", "can", "would", "may"}

// prose writes English-looking text from the vocabulary.
type prose struct{ r *rand.Rand }

func (p prose) pick(l []string) string { return l[p.r.IntN(len(l))] }

func (p prose) slot(name string) string {
	v := vocab
	switch name {
	case "N":
		return v.nouns[p.r.IntN(len(v.nouns))]
	case "Ns":
		return v.plurals[p.r.IntN(len(v.plurals))]
	case "A":
		return p.pick(v.adjs)
	case "R":
		return p.pick(v.advs)
	case "P":
		return p.pick(v.preps)
	case "V":
		return v.verbs[p.r.IntN(len(v.verbs))].base
	case "Vs":
		return v.verbs[p.r.IntN(len(v.verbs))].s
	case "Vd":
		return v.verbs[p.r.IntN(len(v.verbs))].past
	case "Vn":
		return v.verbs[p.r.IntN(len(v.verbs))].pp
	case "Vg":
		return v.verbs[p.r.IntN(len(v.verbs))].ing
	case "Name":
		return p.pick(v.first)
	case "Full":
		return p.pick(v.first) + " " + p.pick(v.last)
	case "Place":
		return p.pick(v.places)
	case "T":
		return p.pick(v.tech)
	case "Month":
		return p.pick(v.months)
	case "Day":
		return p.pick(v.days)
	case "Mod":
		return p.pick(modals)
	case "Unit":
		return p.pick(units)
	case "Num":
		return strconv.Itoa(2 + p.r.IntN(p.pick3(12, 60, 900)))
	case "Small":
		return strconv.Itoa(1 + p.r.IntN(5))
	case "Pct":
		return strconv.Itoa(1+p.r.IntN(98)) + "." + strconv.Itoa(p.r.IntN(10))
	case "Ver":
		return strconv.Itoa(p.r.IntN(4)) + "." + strconv.Itoa(p.r.IntN(30)) + "." + strconv.Itoa(p.r.IntN(12))
	case "a":
		return "a"
	}
	return name
}

func (p prose) pick3(a, b, c int) int {
	switch p.r.IntN(3) {
	case 0:
		return a
	case 1:
		return b
	}
	return c
}

func (p prose) expand(tpl string) string {
	var words []string
	for _, tok := range strings.Fields(tpl) {
		var b strings.Builder
		for len(tok) > 0 {
			i := strings.IndexByte(tok, '{')
			if i < 0 {
				b.WriteString(tok)
				break
			}
			b.WriteString(tok[:i])
			j := strings.IndexByte(tok[i:], '}')
			b.WriteString(p.slot(tok[i+1 : i+j]))
			tok = tok[i+j+1:]
		}
		words = append(words, b.String())
	}
	for i := 0; i+1 < len(words); i++ {
		if words[i] == "a" && needsAn(words[i+1]) {
			words[i] = "an"
		}
	}
	s := strings.Join(words, " ")
	return capFirst(s)
}

func needsAn(w string) bool {
	lw := strings.ToLower(w)
	if lw == "" {
		return false
	}
	switch {
	case strings.HasPrefix(lw, "uni"), strings.HasPrefix(lw, "use"), strings.HasPrefix(lw, "usu"),
		strings.HasPrefix(lw, "uti"), strings.HasPrefix(lw, "eu"), strings.HasPrefix(lw, "one"):
		return false
	case strings.HasPrefix(lw, "hour"), strings.HasPrefix(lw, "honest"):
		return true
	}
	return strings.IndexByte("aeiou", lw[0]) >= 0
}

func capFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

func (p prose) sentence() string { return p.expand(p.pick(statementTemplates)) }
func (p prose) question() string { return p.expand(p.pick(questionTemplates)) }

// paragraph joins n statements; about one in five paragraphs also asks.
func (p prose) paragraph(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		if i == n-1 && n > 2 && p.r.IntN(5) == 0 {
			b.WriteString(p.question())
		} else {
			b.WriteString(p.sentence())
		}
	}
	return b.String()
}

// words returns a paragraph of at least n words.
func (p prose) words(n int) string {
	var b strings.Builder
	c := 0
	for c < n {
		s := p.sentence()
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
		c += strings.Count(s, " ") + 1
	}
	return b.String()
}

func (p prose) title() string {
	return capFirst(p.pick(vocab.adjs) + " " + p.pick(vocab.nouns) + " " + p.pick(vocab.plurals))
}

// markdown is an assistant-style answer: paragraphs, a list, sometimes a
// heading and a fenced code block.
func (p prose) markdown(paras int, code func() string) string {
	var parts []string
	if p.r.IntN(3) == 0 {
		parts = append(parts, "## "+p.title())
	}
	for i := 0; i < paras; i++ {
		parts = append(parts, p.paragraph(2+p.r.IntN(4)))
		if p.r.IntN(4) == 0 {
			var l []string
			for j := 0; j < 2+p.r.IntN(4); j++ {
				mark := "-"
				if p.r.IntN(3) == 0 {
					mark = strconv.Itoa(j+1) + "."
				}
				l = append(l, mark+" "+p.sentence())
			}
			parts = append(parts, strings.Join(l, "\n"))
		}
		if code != nil && p.r.IntN(3) == 0 {
			parts = append(parts, code())
		}
	}
	return strings.Join(parts, "\n\n")
}

// ident builds identifiers in the styles code uses.
func (p prose) ident(style int, parts int) string {
	ws := make([]string, parts)
	for i := range ws {
		switch i {
		case 0:
			if parts > 1 && p.r.IntN(2) == 0 {
				ws[i] = vocab.verbs[p.r.IntN(len(vocab.verbs))].base
			} else {
				ws[i] = p.pick(vocab.nouns)
			}
		default:
			if p.r.IntN(3) == 0 {
				ws[i] = p.pick(vocab.adjs)
			} else {
				ws[i] = p.pick(vocab.nouns)
			}
		}
		ws[i] = strings.ToLower(ws[i])
	}
	switch style {
	case 0: // camelCase
		for i := 1; i < len(ws); i++ {
			ws[i] = capFirst(ws[i])
		}
		return strings.Join(ws, "")
	case 1: // PascalCase
		for i := range ws {
			ws[i] = capFirst(ws[i])
		}
		return strings.Join(ws, "")
	case 2: // snake_case
		return strings.Join(ws, "_")
	case 3: // kebab-case
		return strings.Join(ws, "-")
	}
	return strings.ToUpper(strings.Join(ws, "_"))
}
