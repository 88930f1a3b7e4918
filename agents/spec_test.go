package agents

import (
	"strings"
	"testing"
)

func TestCatalogueEmbedded(t *testing.T) {
	as := All()
	want := map[string]string{"codex": "@openai/codex", "claude": "@anthropic-ai/claude-code", "opencode": "opencode-ai", "qwen": "@qwen-code/qwen-code", "pi": "@mariozechner/pi-coding-agent"}
	if len(as) != len(want) {
		t.Fatalf("agents.json has %d agents, want %d", len(as), len(want))
	}
	for _, a := range as {
		if want[a.Name] != a.Package {
			t.Errorf("%s: package %q, want %q", a.Name, a.Package, want[a.Name])
		}
		if a.Checked == "" || a.Version == "" {
			t.Errorf("%s: no version or checked date", a.Name)
		}
		if a.Session.Where == "" {
			t.Errorf("%s: no session field", a.Name)
		}
	}
}

func TestCatalogueErrorsNameTheField(t *testing.T) {
	good := `{"checked":"d","agents":[{"name":"x","package":"p","version":"1.0.0","checked":"d","api":"openai-chat","bin":"x","session":{"where":"none","name":""},"first":["{prompt}"],"resume":["-c","{prompt}"]}]}`
	if _, err := parseCatalogue([]byte(good)); err != nil {
		t.Fatalf("good catalogue: %v", err)
	}
	for _, c := range []struct{ from, to, want string }{
		{`"version":"1.0.0"`, `"version":"^1.0.0"`, "exact version"},
		{`"api":"openai-chat"`, `"api":"grpc"`, `api "grpc"`},
		{`"resume":["-c","{prompt}"]`, `"resume":["-c"]`, "{prompt}"},
		{`"where":"none","name":""`, `"where":"header","name":""`, "session.name"},
		{`"bin":"x"`, `"bin":"x","colour":"red"`, "unknown field"},
		{`"first":["{prompt}"]`, `"first":["{prompt}"],"files":{"/etc/passwd":"x"}`, "files"},
	} {
		bad := strings.Replace(good, c.from, c.to, 1)
		_, err := parseCatalogue([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "agents.json") {
			t.Errorf("%s: error %v, want one naming agents.json and %q", c.to, err, c.want)
		}
	}
}

func TestSelect(t *testing.T) {
	as, err := Select([]string{"pi", "codex"})
	if err != nil || len(as) != 2 || as[0].Name != "codex" || as[1].Name != "pi" {
		t.Fatalf("Select(pi,codex) = %v, %v; want codex, pi in agents.json's order", as, err)
	}
	if _, err := Select([]string{"codex", "aider"}); err == nil || !strings.Contains(err.Error(), "aider") || !strings.Contains(err.Error(), "opencode") {
		t.Fatalf("Select(aider): %v, want an error naming it and the known agents", err)
	}
}

func TestExpand(t *testing.T) {
	got := expand("{base}/v1 {model} {nope}", map[string]string{"base": "http://127.0.0.1:1", "model": "m"})
	if got != "http://127.0.0.1:1/v1 m {nope}" {
		t.Fatalf("expand: %q", got)
	}
}
