package realistic

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Code is built from per-language statement shapes filled with identifiers
// drawn from the vocabulary, so two snippets share syntax but not names.

var codeLangs = []string{"go", "python", "typescript", "rust", "sql", "bash", "yaml"}

var langExt = map[string]string{
	"go": ".go", "python": ".py", "typescript": ".ts", "rust": ".rs", "sql": ".sql", "bash": ".sh", "yaml": ".yaml",
}

func (g *gen) lang() string {
	// Weighted towards the languages agents are asked about most.
	w := []int{5, 5, 4, 2, 2, 2, 1}
	n := g.r.IntN(21)
	for i, x := range w {
		if n < x {
			return codeLangs[i]
		}
		n -= x
	}
	return "go"
}

// fenced is a Markdown code block, the way assistants paste code.
func (g *gen) fenced(lines int) string {
	l := g.lang()
	return "```" + l + "\n" + g.code(l, lines) + "\n```"
}

func (g *gen) code(lang string, lines int) string {
	if lines < 4 {
		lines = 4
	}
	switch lang {
	case "python":
		return g.pyCode(lines)
	case "typescript":
		return g.tsCode(lines)
	case "rust":
		return g.rsCode(lines)
	case "sql":
		return g.sqlCode(lines)
	case "bash":
		return g.shCode(lines)
	case "yaml":
		return g.yamlCode(lines)
	}
	return g.goCode(lines)
}

func indent(s, pre string) string {
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		if l != "" {
			ls[i] = pre + l
		}
	}
	return strings.Join(ls, "\n")
}

func (g *gen) camel(n int) string  { return g.p.ident(0, n) }
func (g *gen) pascal(n int) string { return g.p.ident(1, n) }
func (g *gen) snake(n int) string  { return g.p.ident(2, n) }
func (g *gen) kebab(n int) string  { return g.p.ident(3, n) }

func (g *gen) lowerWords(n int) string {
	ws := make([]string, n)
	for i := range ws {
		if i%2 == 0 {
			ws[i] = vocab.verbs[g.r.IntN(len(vocab.verbs))].ing
		} else {
			ws[i] = g.p.pick(vocab.nouns)
		}
	}
	return strings.ToLower(strings.Join(ws, " "))
}

func (g *gen) goStmt(depth int) string {
	v := g.camel(1 + g.r.IntN(2))
	f := g.pascal(1 + g.r.IntN(2))
	switch g.r.IntN(9) {
	case 0:
		return fmt.Sprintf("%s, err := s.%s.%s(ctx, %s)\nif err != nil {\n\treturn nil, fmt.Errorf(\"%s: %%w\", err)\n}", v, g.camel(1), f, g.camel(1), g.lowerWords(2))
	case 1:
		if depth > 1 {
			return fmt.Sprintf("%s := len(%s) * %d", v, g.camel(1), 2+g.r.IntN(60))
		}
		return fmt.Sprintf("for _, %s := range %s {\n%s\n}", v, g.camel(1)+"s", indent(g.goStmt(depth+1), "\t"))
	case 2:
		return fmt.Sprintf("s.log.Info(%q, %q, %s, \"elapsed\", time.Since(start))", g.lowerWords(2), g.camel(1), v)
	case 3:
		return fmt.Sprintf("%s := make(map[string]*%s, len(%s))", v, f, g.camel(1))
	case 4:
		return fmt.Sprintf("if %s == nil {\n\treturn nil, errors.New(%q)\n}", v, g.p.pick(vocab.nouns)+" is "+g.p.pick(vocab.adjs))
	case 5:
		return fmt.Sprintf("defer %s.Close()", v)
	case 6:
		return fmt.Sprintf("select {\ncase <-ctx.Done():\n\treturn nil, ctx.Err()\ncase %s := <-s.%s:\n\ts.%s = append(s.%s, %s)\n}", v, g.camel(1), g.camel(1), g.camel(1), v)
	case 7:
		return fmt.Sprintf("// %s\n%s.%s = %s.%s(%d * time.Millisecond)", g.p.sentence(), v, f, g.camel(1), g.pascal(1), 10*(1+g.r.IntN(90)))
	}
	return fmt.Sprintf("if err := %s.%s(); err != nil && !errors.Is(err, %s) {\n\treturn nil, err\n}", v, f, "Err"+g.pascal(1))
}

func (g *gen) goCode(lines int) string {
	var b strings.Builder
	typ := g.pascal(2)
	fmt.Fprintf(&b, "package %s\n\nimport (\n\t\"context\"\n\t\"errors\"\n\t\"fmt\"\n\t\"time\"\n)\n\n", strings.ToLower(g.p.pick(vocab.nouns)))
	doc := g.p.sentence()
	// lower-case the first rune, not the first byte: a sentence may open
	// with a quotation mark of three bytes
	_, n := utf8.DecodeRuneInString(doc)
	fmt.Fprintf(&b, "// %s %s\ntype %s struct {\n", typ, strings.ToLower(doc[:n])+doc[n:], typ)
	for i := 0; i < 2+g.r.IntN(4); i++ {
		t := []string{"string", "int", "[]byte", "time.Duration", "*" + g.pascal(1), "map[string]int", "chan struct{}"}[g.r.IntN(7)]
		fmt.Fprintf(&b, "\t%s %s\n", g.camel(1+g.r.IntN(2)), t)
	}
	b.WriteString("}\n")
	for strings.Count(b.String(), "\n") < lines {
		fmt.Fprintf(&b, "\nfunc (s *%s) %s(ctx context.Context, %s string) (*%s, error) {\n\tstart := time.Now()\n", typ, g.pascal(2), g.camel(1), g.pascal(1))
		for i := 0; i < 3+g.r.IntN(5); i++ {
			b.WriteString(indent(g.goStmt(0), "\t") + "\n")
		}
		b.WriteString("\treturn &" + g.pascal(1) + "{}, nil\n}\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func (g *gen) pyStmt(depth int) string {
	v := g.snake(1 + g.r.IntN(2))
	switch g.r.IntN(8) {
	case 0:
		return fmt.Sprintf("if not %s:\n    raise ValueError(%q)", v, g.p.pick(vocab.nouns)+" is "+g.p.pick(vocab.adjs))
	case 1:
		return fmt.Sprintf("%s = self.%s.get(%q, %d)", v, g.snake(1), g.snake(1), g.r.IntN(100))
	case 2:
		if depth > 1 {
			return fmt.Sprintf("%s += %d", v, 1+g.r.IntN(9))
		}
		return fmt.Sprintf("for %s in %s:\n%s", g.snake(1), v+"s", indent(g.pyStmt(depth+1), "    "))
	case 3:
		return fmt.Sprintf("logger.info(\"%s %%s\", %s)", g.lowerWords(2), v)
	case 4:
		it := g.snake(1)
		return fmt.Sprintf("%s = [%s for %s in self.%s if %s.%s]", v, it, it, g.snake(1), it, g.snake(1))
	case 5:
		return fmt.Sprintf("with open(%q) as fh:\n    %s = json.load(fh)", g.path(".json"), v)
	case 6:
		return fmt.Sprintf("try:\n    %s = await self.%s(%s)\nexcept %sError as exc:\n    logger.warning(%q, exc)\n    %s = None", v, g.snake(2), g.snake(1), g.pascal(1), g.p.sentence(), v)
	}
	return fmt.Sprintf("# %s\n%s = %s(%s=%d, %s=%q)", g.p.sentence(), v, g.pascal(2), g.snake(1), g.r.IntN(500), g.snake(1), g.kebab(2))
}

func (g *gen) pyCode(lines int) string {
	var b strings.Builder
	cls := g.pascal(2)
	fmt.Fprintf(&b, "import json\nimport logging\nfrom %s.%s import %s\n\nlogger = logging.getLogger(__name__)\n\n\nclass %s:\n    \"\"\"%s\"\"\"\n\n    def __init__(self, %s):\n        self.%s = %s\n",
		g.snake(1), g.snake(1), g.pascal(1), cls, g.p.sentence(), g.snake(1), g.snake(1), g.snake(1))
	for strings.Count(b.String(), "\n") < lines {
		fmt.Fprintf(&b, "\n    async def %s(self, %s, %s=None):\n", g.snake(2), g.snake(1), g.snake(1))
		for i := 0; i < 3+g.r.IntN(5); i++ {
			b.WriteString(indent(g.pyStmt(0), "        ") + "\n")
		}
		fmt.Fprintf(&b, "        return %s\n", g.snake(1))
	}
	return strings.TrimRight(b.String(), "\n")
}

func (g *gen) tsStmt(depth int) string {
	v := g.camel(1 + g.r.IntN(2))
	switch g.r.IntN(7) {
	case 0:
		return fmt.Sprintf("const %s = await this.%s.%s(%s);", v, g.camel(1), g.camel(2), g.camel(1))
	case 1:
		return fmt.Sprintf("if (!%s) {\n  throw new Error(`%s ${%s}`);\n}", v, g.lowerWords(2), g.camel(1))
	case 2:
		if depth > 1 {
			return fmt.Sprintf("%s.push(%s);", g.camel(1), v)
		}
		return fmt.Sprintf("for (const %s of %s) {\n%s\n}", v, g.camel(1)+"s", indent(g.tsStmt(depth+1), "  "))
	case 3:
		return fmt.Sprintf("const %s: Record<string, %s> = {};", v, g.pascal(1))
	case 4:
		return fmt.Sprintf("console.debug(%q, { %s, %s });", g.lowerWords(2), v, g.camel(1))
	case 5:
		return fmt.Sprintf("// %s\nconst %s = %s.filter((x) => x.%s > %d).map((x) => x.%s);", g.p.sentence(), v, g.camel(1), g.camel(1), g.r.IntN(100), g.camel(1))
	}
	return fmt.Sprintf("this.%s.set(%s, { %s: Date.now(), %s: %d });", g.camel(1), v, g.camel(1), g.camel(1), g.r.IntN(1000))
}

func (g *gen) tsCode(lines int) string {
	var b strings.Builder
	typ := g.pascal(2)
	fmt.Fprintf(&b, "import { %s } from \"./%s\";\n\nexport interface %s {\n", g.pascal(1), g.kebab(2), typ)
	for i := 0; i < 2+g.r.IntN(4); i++ {
		fmt.Fprintf(&b, "  %s: %s;\n", g.camel(1+g.r.IntN(2)), []string{"string", "number", "boolean", "string[]", g.pascal(1), "Date"}[g.r.IntN(6)])
	}
	b.WriteString("}\n")
	for strings.Count(b.String(), "\n") < lines {
		fmt.Fprintf(&b, "\nexport async function %s(%s: %s): Promise<%s> {\n", g.camel(2), g.camel(1), typ, g.pascal(1))
		for i := 0; i < 3+g.r.IntN(5); i++ {
			b.WriteString(indent(g.tsStmt(0), "  ") + "\n")
		}
		fmt.Fprintf(&b, "  return %s;\n}\n", g.camel(1))
	}
	return strings.TrimRight(b.String(), "\n")
}

func (g *gen) rsCode(lines int) string {
	var b strings.Builder
	typ := g.pascal(2)
	fmt.Fprintf(&b, "use std::collections::HashMap;\n\n#[derive(Debug, Clone)]\npub struct %s {\n", typ)
	for i := 0; i < 2+g.r.IntN(3); i++ {
		fmt.Fprintf(&b, "    pub %s: %s,\n", g.snake(1+g.r.IntN(2)), []string{"String", "u64", "Vec<u8>", "Option<String>", "HashMap<String, u32>"}[g.r.IntN(5)])
	}
	b.WriteString("}\n")
	for strings.Count(b.String(), "\n") < lines {
		fmt.Fprintf(&b, "\nimpl %s {\n    pub fn %s(&mut self, %s: &str) -> Result<usize, Error> {\n", typ, g.snake(2), g.snake(1))
		for i := 0; i < 3+g.r.IntN(4); i++ {
			v := g.snake(1)
			switch g.r.IntN(4) {
			case 0:
				fmt.Fprintf(&b, "        let %s = self.%s.get(%q).copied().unwrap_or(%d);\n", v, g.snake(1), g.snake(1), g.r.IntN(64))
			case 1:
				fmt.Fprintf(&b, "        if %s.is_empty() {\n            return Err(Error::%s);\n        }\n", g.snake(1), g.pascal(1))
			case 2:
				fmt.Fprintf(&b, "        for %s in self.%s.iter() {\n            tracing::debug!(%q, %s);\n        }\n", v, g.snake(1), g.lowerWords(2)+" {:?}", v)
			default:
				fmt.Fprintf(&b, "        // %s\n        let %s = %s.len() * %d;\n", g.p.sentence(), v, g.snake(1), 1+g.r.IntN(16))
			}
		}
		fmt.Fprintf(&b, "        Ok(%s)\n    }\n}\n", g.snake(1))
	}
	return strings.TrimRight(b.String(), "\n")
}

func (g *gen) sqlCode(lines int) string {
	var b strings.Builder
	t := g.snake(2)
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (\n    id BIGSERIAL PRIMARY KEY,\n", t)
	for i := 0; i < 3+g.r.IntN(4); i++ {
		fmt.Fprintf(&b, "    %s %s,\n", g.snake(1+g.r.IntN(2)), []string{"TEXT NOT NULL", "INTEGER", "TIMESTAMPTZ DEFAULT now()", "JSONB", "BOOLEAN DEFAULT false", "NUMERIC(12, 2)"}[g.r.IntN(6)])
	}
	b.WriteString("    created_at TIMESTAMPTZ NOT NULL DEFAULT now()\n);\n")
	for strings.Count(b.String(), "\n") < lines {
		a, c := g.snake(1), g.snake(2)
		fmt.Fprintf(&b, "\n-- %s\nSELECT %s.id, %s.%s, count(*) AS %s\nFROM %s\nJOIN %s ON %s.%s_id = %s.id\nWHERE %s.%s > now() - interval '%d days'\n  AND %s.%s IS NOT NULL\nGROUP BY 1, 2\nORDER BY 3 DESC\nLIMIT %d;\n",
			g.p.sentence(), t, t, a, g.snake(1), t, c, c, t, t, t, g.snake(1), 1+g.r.IntN(90), c, g.snake(1), 10*(1+g.r.IntN(20)))
	}
	return strings.TrimRight(b.String(), "\n")
}

func (g *gen) shCode(lines int) string {
	var b strings.Builder
	b.WriteString("#!/usr/bin/env bash\nset -euo pipefail\n\n")
	fmt.Fprintf(&b, "%s=\"${%s:-%s}\"\n", strings.ToUpper(g.snake(2)), strings.ToUpper(g.snake(1)), g.kebab(2))
	for strings.Count(b.String(), "\n") < lines {
		switch g.r.IntN(4) {
		case 0:
			fmt.Fprintf(&b, "\nfor f in %s/*%s; do\n  echo \"%s $f\"\n  %s --%s \"$f\" >> %s.log\ndone\n", g.kebab(1), langExt[g.p.pick(codeLangs)], g.lowerWords(2), g.kebab(1), g.kebab(1), g.kebab(1))
		case 1:
			fmt.Fprintf(&b, "\nif [[ ! -d \"%s\" ]]; then\n  mkdir -p \"%s\"\nfi\n", g.path(""), g.path(""))
		case 2:
			fmt.Fprintf(&b, "\ncurl -fsS -X POST \"https://%s.example.com/api/v%d/%s\" \\\n  -H \"Content-Type: application/json\" \\\n  -d '{\"%s\": \"%s\", \"limit\": %d}' | jq '.%s'\n", g.kebab(1), 1+g.r.IntN(3), g.kebab(2), g.snake(1), g.kebab(2), 10*(1+g.r.IntN(10)), g.snake(1))
		default:
			fmt.Fprintf(&b, "\n# %s\n%s() {\n  local %s=\"$1\"\n  git -C \"$%s\" %s --quiet || return 1\n}\n", g.p.sentence(), g.snake(2), g.snake(1), g.snake(1), []string{"fetch", "pull --rebase", "status", "diff --stat"}[g.r.IntN(4)])
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func (g *gen) yamlCode(lines int) string {
	var b strings.Builder
	name := g.kebab(2)
	fmt.Fprintf(&b, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n  namespace: %s\n  labels:\n    app: %s\n    tier: %s\nspec:\n  replicas: %d\n  template:\n    spec:\n      containers:\n",
		name, g.kebab(1), name, g.p.pick(vocab.nouns), 1+g.r.IntN(6))
	for strings.Count(b.String(), "\n") < lines {
		fmt.Fprintf(&b, "        - name: %s\n          image: registry.example.com/%s:%d.%d.%d\n          env:\n            - name: %s\n              value: \"%s\"\n          resources:\n            limits:\n              cpu: \"%dm\"\n              memory: \"%dMi\"\n",
			g.kebab(1), g.kebab(2), g.r.IntN(4), g.r.IntN(30), g.r.IntN(10), strings.ToUpper(g.snake(2)), g.kebab(1), 100*(1+g.r.IntN(20)), 64*(1+g.r.IntN(32)))
	}
	return strings.TrimRight(b.String(), "\n")
}

func (g *gen) path(ext string) string {
	dirs := []string{"src", "internal", "pkg", "app", "lib", "cmd", "services", "web", "scripts", "config"}
	p := g.p.pick(dirs) + "/" + g.snake(1)
	if g.r.IntN(2) == 0 {
		p += "/" + g.snake(1)
	}
	return p + "/" + g.snake(1+g.r.IntN(2)) + ext
}
