package tools_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"lab/hygiene"
	"lab/tools"
)

// Each table entry's argument rules are its JSON schema's: the same arguments in the same order,
// the same required ones, and a JSON type that matches the kind scenario validation checks. So
// the model is told exactly the arguments a scripted call may give.
func TestTableArgsMatchTheSchema(t *testing.T) {
	for _, tl := range tools.Table {
		var schema struct {
			Type       string `json:"type"`
			Properties map[string]struct {
				Type string `json:"type"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		if err := json.Unmarshal([]byte(tl.Schema), &schema); err != nil || schema.Type != "object" {
			t.Errorf("%s: schema %v (type %q); want a JSON object schema", tl.Name, err, schema.Type)
			continue
		}
		var names, required []string
		for _, a := range tl.Args {
			names = append(names, a.Name)
			if a.Required {
				required = append(required, a.Name)
			}
			p, ok := schema.Properties[a.Name]
			if !ok {
				continue
			}
			want := map[tools.ArgKind]string{tools.StringArg: "string", tools.PathArg: "string", tools.CountArg: "integer"}[a.Kind]
			if want != "" && p.Type != want {
				t.Errorf("%s.%s: schema type %q, argument kind wants %q", tl.Name, a.Name, p.Type, want)
			}
		}
		var props []string
		for k := range schema.Properties {
			props = append(props, k)
		}
		if slices.Sort(props); !slices.Equal(props, slices.Sorted(slices.Values(names))) {
			t.Errorf("%s: schema properties %v, argument rules %v", tl.Name, props, names)
		}
		if slices.Sort(required); !slices.Equal(required, slices.Sorted(slices.Values(schema.Required))) {
			t.Errorf("%s: required %v in the rules, %v in the schema", tl.Name, required, schema.Required)
		}
		if tl.Describe == nil || tl.Describe(hygiene.Spec()) == "" {
			t.Errorf("%s: no description", tl.Name)
		}
	}
}

// A tool is its table entry: an entry added to the table is in the tool list with its
// description and schema, runs through the workspace, and is forbidden in a read-only mode
// when it changes files, with nothing else written down.
func TestATableEntryIsTheWholeTool(t *testing.T) {
	ran := ""
	entry := &tools.Tool{
		Name:         "touch_file",
		Describe:     func(hygiene.Measures) string { return "Touch a file." },
		Schema:       `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`,
		Args:         []tools.Arg{{Name: "path", Required: true, Kind: tools.PathArg}},
		ChangesFiles: true,
		Run: func(_ *tools.Workspace, s *hygiene.Session, _ json.RawMessage, a tools.CallArgs) (string, error) {
			ran = a.Path
			return s.Result("touched " + a.Path), nil
		},
	}
	old := tools.Table
	tools.Table = append(slices.Clone(old), entry)
	t.Cleanup(func() { tools.Table = old })

	list := tools.ToolList(hygiene.Spec(), false)
	last := list[len(list)-1]
	if last.Name != "touch_file" || last.Description != "Touch a file." || string(last.Parameters) != entry.Schema {
		t.Errorf("tool list ends with %s (%q, %s); want the new entry", last.Name, last.Description, last.Parameters)
	}
	if tools.Lookup("touch_file") != entry || !slices.Contains(tools.Names(), "touch_file") {
		t.Errorf("Lookup and Names do not find the new entry")
	}
	ws, hs := newWS(t, hygiene.Spec(), "a.txt", "x\n")
	if got := ws.Run(hs, "touch_file", []byte(`{"path":"a.txt"}`)); ran != "a.txt" || !strings.HasSuffix(got, "\ntouched a.txt") {
		t.Errorf("Run = %q (ran with %q); want the entry's run function's answer", got, ran)
	}
	if tools.Allowed("plan", "touch_file") || !tools.Allowed("default", "touch_file") {
		t.Errorf("Allowed: a tool that changes files must be forbidden in plan mode only")
	}
	entry.ChangesFiles = false
	if !tools.Allowed("plan", "touch_file") {
		t.Errorf("Allowed: a tool that changes no file runs in plan mode")
	}
}

// The built-in tools that change files are exactly edit, write, multiedit and apply_patch, and a
// session lists them in the spec's order (§10.4).
func TestTableOrderAndChangesFiles(t *testing.T) {
	var changes []string
	for _, tl := range tools.Table {
		if tl.ChangesFiles {
			changes = append(changes, tl.Name)
		}
	}
	if want := []string{"edit", "write", "multiedit", "apply_patch"}; !slices.Equal(changes, want) {
		t.Errorf("tools that change files %v; want %v", changes, want)
	}
	m := hygiene.Spec()
	m.Recall = true
	var names []string
	for _, tl := range tools.ToolList(m, true) {
		names = append(names, tl.Name)
	}
	if want := []string{"read", "list", "glob", "grep", "edit", "write", "multiedit", "apply_patch", "bash", "recall"}; !slices.Equal(names, want) {
		t.Errorf("tool list %v; want %v", names, want)
	}
}
