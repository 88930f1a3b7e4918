package conformance

import (
	"encoding/json"
	"fmt"
	"strconv"

	"lab"
	"lab/hygiene"
)

// The paths area (paths.json, spec 3.2.0 §11). Every case's input has an "op" and that op's
// fields, all paths absolute except the one a call gave:
//
//	{"op": "env", "root": "/home/ann/app", "start": "/home/ann/app/packages/web"}
//	    → {"text": "Project: app (paths are relative to its root)\nStarted in: packages/web (relative to the project root)"}
//	    the system prompt's environment lines for a session started in start (at or below root).
//	{"op": "resolve", "path": "~/x", "root": "/home/ann/app", "home": "/home/ann"}
//	    → {"abs": "/home/ann/x", "in_project": false}
//	    the file a tool call's path names, and whether it lies in the project (at or below root).
//	{"op": "display", "abs": "/home/ann/.config/lembas/AGENTS.md", "root": "/home/ann/app", "home": "/home/ann"}
//	    → {"path": "~/.config/lembas/AGENTS.md"}
//	    how the prompt, a note or a task message names that file.
//
// Input and want are decoded strictly: an unknown or missing field is an error.

type pathsOp struct {
	Op string `json:"op"`
}

type pathsEnvInput struct {
	Op    string `json:"op"`
	Root  string `json:"root"`
	Start string `json:"start"`
}

type pathsEnvWant struct {
	Text *string `json:"text"`
}

type pathsResolveInput struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	Root string `json:"root"`
	Home string `json:"home"`
}

type pathsResolveWant struct {
	Abs       *string `json:"abs"`
	InProject *bool   `json:"in_project"`
}

type pathsDisplayInput struct {
	Op   string `json:"op"`
	Abs  string `json:"abs"`
	Root string `json:"root"`
	Home string `json:"home"`
}

type pathsDisplayWant struct {
	Path *string `json:"path"`
}

// checkPaths runs one paths.json case (§11) against hygiene.Config.Environment,
// hygiene.ResolvePath and hygiene.DisplayPath: nil when it passes, else an error naming the first
// differing line or field. A case whose input or want does not decode strictly, or misses a
// field, is an error too.
func checkPaths(c Case) error {
	var op pathsOp
	if err := json.Unmarshal(c.Input, &op); err != nil {
		return fmt.Errorf("input: %w", err)
	}
	switch op.Op {
	case "env":
		var in pathsEnvInput
		var want pathsEnvWant
		if err := decodeCase(c, &in, &want); err != nil {
			return err
		}
		if in.Root == "" || in.Start == "" || want.Text == nil {
			return fmt.Errorf("env: input needs root and start, want needs text")
		}
		cfg, err := hygiene.ParseConfig(lab.LoopJSON)
		if err != nil {
			return err
		}
		got, err := cfg.Environment(in.Root, in.Start)
		if err != nil {
			return fmt.Errorf("env: %w", err)
		}
		return diffText("environment lines", *want.Text, got)
	case "resolve":
		var in pathsResolveInput
		var want pathsResolveWant
		if err := decodeCase(c, &in, &want); err != nil {
			return err
		}
		if in.Root == "" || in.Home == "" || want.Abs == nil || want.InProject == nil {
			return fmt.Errorf("resolve: input needs path, root and home, want needs abs and in_project")
		}
		got := hygiene.ResolvePath(in.Path, in.Root, in.Home)
		if err := diffText("abs", *want.Abs, got); err != nil {
			return err
		}
		// In the project: the root itself or below it (DisplayPath names it relative to the root).
		rel := hygiene.DisplayPath(got, in.Root, "")
		inProject := rel != got
		if inProject != *want.InProject {
			return fmt.Errorf("in_project: want %s, got %s", strconv.FormatBool(*want.InProject), strconv.FormatBool(inProject))
		}
		return nil
	case "display":
		var in pathsDisplayInput
		var want pathsDisplayWant
		if err := decodeCase(c, &in, &want); err != nil {
			return err
		}
		if in.Abs == "" || in.Root == "" || in.Home == "" || want.Path == nil {
			return fmt.Errorf("display: input needs abs, root and home, want needs path")
		}
		return diffText("path", *want.Path, hygiene.DisplayPath(in.Abs, in.Root, in.Home))
	}
	return fmt.Errorf("input: op %q, want env, resolve or display", op.Op)
}
