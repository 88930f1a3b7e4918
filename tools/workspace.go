package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aymanbagabas/go-udiff"
	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/tools/txtar"

	"lab/hygiene"
)

// Workspace is a sandboxed copy of a scenario's workspace: the tools read and change it for real,
// and nothing outside Root. Not safe for concurrent use.
//
// Root and Home are the shown paths (the sandbox's [Sandbox].Shown): every path a tool answer
// names is under them, and a path a call gives is resolved against them (spec 3.2.0 §1, §11).
// The files are really in the sandbox's [Sandbox].Dir, which the tools open by descriptor and
// never name.
type Workspace struct {
	// Root is the project root as shown, an absolute path ending in the project's name.
	Root string
	// Home is the person's home directory that "~/…" resolves against (spec 3.2.0 §11): the
	// sandbox's parent directory, as if the project lived at ~/<project>, so no call ever
	// reaches the machine's real home. A "~/…" path outside Root is refused like any other.
	Home string
	// Alias, when set, is another absolute path the project is known by: the folder a harness
	// practice told the model the session runs in (the cwd practice). A path a call gives under
	// it resolves as the same path under Root; answers still name Root.
	Alias string

	// hostRoot and hostHome are Root and Home as they really are on the machine (the same paths
	// when the sandbox is shown where it is).
	hostRoot, hostHome string
	// hostShellHome is shellHome as it really is on the machine.
	hostShellHome string

	// shellHome is the live shell's HOME once [Workspace.ShellHome] made it.
	shellHome string
	// root is the project folder opened ([Workspace.dir]); realRoot is hostRoot with its links
	// resolved, which an absolute link inside the project may name.
	root     *os.Root
	realRoot string
	// call is the context of the tool call under way ([Workspace.RunWithin]), checked inside
	// every walk and read so that a call past its time limit returns; nil between calls.
	call context.Context
	// made is what [NewSandboxWorkspace] wrote, until [Workspace.Remember] makes it known, the
	// workspace's own account of its folder (nil: read the folder).
	made, known *known
	// folders are the project's folders opened ([Workspace.folder]), while made or known.
	folders map[string]*os.Root
}

// alive reports the error of the tool call under way once its context is done (its time limit
// passed, or the run was stopped): every walk and read checks it and returns with it.
func (w *Workspace) alive() error {
	if w.call == nil {
		return nil
	}
	return w.call.Err()
}

// ShellHome returns the live shell's home directory (its HOME): Home/.home, beside the project
// and outside it, so that what a command keeps under ~ (a build cache, say) stays out of the
// project's listings and searches. The path is the same in every session of a run (a command's
// output may show it), and the first call of each Workspace empties it: no session finds what
// another kept there. Errors are the filesystem's.
func (w *Workspace) ShellHome() (string, error) {
	w.forget() // a command may change anything in the project
	if w.shellHome != "" {
		return w.shellHome, nil
	}
	if w.Home == "" {
		return "", fmt.Errorf("shell home: the workspace has no home")
	}
	name := ".home"
	if within(filepath.Join(w.Home, name), w.Root) {
		name = ".home-shell"
	}
	host := filepath.Join(w.hostHome, name)
	if err := os.RemoveAll(host); err != nil {
		return "", fmt.Errorf("shell home %s: %w", filepath.Join(w.Home, name), unwrapPathError(err))
	}
	if err := os.MkdirAll(host, 0o755); err != nil {
		return "", fmt.Errorf("shell home %s: %w", filepath.Join(w.Home, name), unwrapPathError(err))
	}
	w.shellHome, w.hostShellHome = filepath.Join(w.Home, name), host
	return w.shellHome, nil
}

// Shell returns the live shell of the workspace ([Shell]): the project and [Workspace.ShellHome]
// at their shown paths, mounted there from where they really are; the caller sets Limit and
// Unsandboxed. Errors are ShellHome's.
func (w *Workspace) Shell() (Shell, error) {
	home, err := w.ShellHome()
	if err != nil {
		return Shell{}, err
	}
	return Shell{Project: w.Root, Home: home, ProjectDir: w.hostRoot, HomeDir: w.hostShellHome}, nil
}

// show returns the host path p (under the sandbox's real folder, as the machine names it) as
// tool answers name it: under Home; any other path as it is.
func (w *Workspace) show(p string) string {
	for _, host := range []string{w.realRoot, w.hostRoot} {
		for _, pair := range [][2]string{{host, w.Root}, {filepath.Dir(host), w.Home}} {
			if pair[0] != "" && within(pair[0], p) {
				rel, _ := filepath.Rel(pair[0], p)
				return filepath.Join(pair[1], rel)
			}
		}
	}
	return p
}

// NewWorkspace writes files into dir/project (created; an existing dir/project is replaced) and
// returns the sandbox, with the project folder opened as the root every tool call goes through,
// shown where it is ([NewSandboxWorkspace] with Dir and Shown dir).
func NewWorkspace(files []txtar.File, dir, project string) (*Workspace, error) {
	return NewSandboxWorkspace(files, Sandbox{Dir: dir, Shown: dir}, project)
}

// NewSandboxWorkspace writes files into sb.Dir/project (created; an existing one is replaced) and
// returns the workspace shown as sb.Shown/project (its Root), with the real project folder opened
// as the root every tool call goes through. sb.Shown "" means sb.Dir.
func NewSandboxWorkspace(files []txtar.File, sb Sandbox, project string) (*Workspace, error) {
	if sb.Shown == "" {
		sb.Shown = sb.Dir
	}
	host, err := filepath.Abs(filepath.Join(sb.Dir, project))
	if err != nil {
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	root, err := filepath.Abs(filepath.Join(sb.Shown, project))
	if err != nil {
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	if err := os.RemoveAll(host); err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w", root, unwrapPathError(err))
	}
	if err := os.MkdirAll(host, 0o755); err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w", root, unwrapPathError(err))
	}
	w := &Workspace{Root: root, Home: filepath.Dir(root), hostRoot: host, hostHome: filepath.Dir(host)}
	dirRoot, err := w.dir()
	if err != nil {
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	// Each folder is made once and opened once, as a root of its own below the project's, and
	// its files are created in it by name: a file costs one open, not one per folder on its way.
	folder := func(d string) (*os.Root, error) { return w.folder(d, true) }
	made := newKnown()
	for _, f := range files {
		name := path.Clean(f.Name)
		if !fs.ValidPath(name) || name == "." {
			// Not a name inside the project: the root refuses it, and says why.
			if err := dirRoot.MkdirAll(path.Dir(name), 0o755); err != nil {
				return nil, fmt.Errorf("create sandbox: %w", err)
			}
			if err := dirRoot.WriteFile(name, f.Data, 0o644); err != nil {
				return nil, fmt.Errorf("create sandbox: %w", err)
			}
			made = nil
			continue
		}
		r, err := folder(path.Dir(name))
		if err != nil {
			return nil, fmt.Errorf("create sandbox: %s: %w", name, err)
		}
		if err := r.WriteFile(path.Base(name), f.Data, 0o644); err != nil {
			return nil, fmt.Errorf("create sandbox: %s: %w", name, err)
		}
		if made != nil && !made.put(name, f.Data) {
			made = nil
		}
	}
	w.made = made
	return w, nil
}

// folder returns the project's folder d (a name relative to the root) opened as a root of its
// own, opened once through its parent's and kept while the workspace knows its folder (forget
// closes them): no link is on the way of a folder the workspace made. With mk the folder is
// made when it is not there.
func (w *Workspace) folder(d string, mk bool) (*os.Root, error) {
	if d == "." {
		return w.dir()
	}
	if r := w.folders[d]; r != nil {
		return r, nil
	}
	parent, err := w.folder(path.Dir(d), mk)
	if err != nil {
		return nil, err
	}
	if mk {
		if err := parent.Mkdir(path.Base(d), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	r, err := parent.OpenRoot(path.Base(d))
	if err != nil {
		return nil, err
	}
	if w.folders == nil {
		w.folders = map[string]*os.Root{}
	}
	w.folders[d] = r
	return r, nil
}

// closeFolders closes the folders [Workspace.folder] opened.
func (w *Workspace) closeFolders() {
	for _, r := range w.folders {
		r.Close()
	}
	w.folders = nil
}

// Remove deletes the sandbox.
func (w *Workspace) Remove() error {
	w.forget()
	if w.root != nil {
		w.root.Close()
		w.root = nil
	}
	return os.RemoveAll(w.hostRoot)
}

// dir returns the project folder opened as an [os.Root] (opened on first use, then kept, so that
// a folder put in the project's place later is not the one the tools use). Every file the tools
// read, write, list or search is opened through it, by a path relative to it: the kernel walks
// the path one name at a time from the opened folder and no link is followed out of it, so the
// check that a path stays in the project and the open are one step, and no process changing the
// project's folders and links meanwhile can make a tool open a file outside.
func (w *Workspace) dir() (*os.Root, error) {
	if w.root != nil {
		return w.root, nil
	}
	r, err := os.OpenRoot(w.hostRoot)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	real, err := filepath.EvalSymlinks(w.hostRoot)
	if err != nil {
		r.Close()
		return nil, unwrapPathError(err)
	}
	w.root, w.realRoot = r, real
	return r, nil
}

// resolve resolves a path the model gave (spec 3.2.0 §11, [hygiene.ResolvePath]): a relative path
// against the project root, "~/…" against Home, an absolute one as it is, refusing anything
// outside the root. It returns the absolute path answers name and name, the path the tools open
// through [Workspace.dir]: relative to the root, '/'-separated, "." for the root itself. The error
// names the absolute path (§1: "Every other answer (an error, a refusal…) names the absolute
// path").
//
// A file is identified by its resolved path (§1): the links on the way are followed (by reading
// them through the root, never by opening a path outside), a file that exists is named by its
// path with no link in it, and a link leading outside the project, or to nothing, is refused. A
// path that does not exist (yet) is named as given. resolve only names: the open through the root
// is what keeps a tool inside, whatever changed in between.
func (w *Workspace) resolve(p string) (abs, name string, err error) {
	abs = hygiene.ResolvePath(p, w.Root, w.Home)
	if w.Alias != "" && filepath.IsAbs(p) && within(w.Alias, filepath.Clean(p)) {
		rel, _ := filepath.Rel(w.Alias, filepath.Clean(p))
		abs = filepath.Join(w.Root, rel)
	}
	if !within(w.Root, abs) {
		return "", "", fmt.Errorf("%s is outside the project", abs)
	}
	if _, err := w.dir(); err != nil {
		return "", "", fmt.Errorf("resolve %s: %w", w.Root, err)
	}
	rel, err := filepath.Rel(w.Root, abs)
	if err != nil {
		return "", "", fmt.Errorf("resolve %s: %w", abs, err)
	}
	name, missing, err := w.follow(filepath.ToSlash(rel))
	var esc *escapeError
	var dangling *danglingError
	switch {
	case errors.As(err, &esc):
		// Name where the link leads, as the machine resolves it, only for the message; a
		// place the shown paths do not cover, reached by a relative link climbing out of the
		// sandbox's folder, as the shown tree has it (never the real folder's parents).
		name := func(real, shown string) string {
			if s := w.show(real); s != real || esc.absolute {
				return s
			}
			return shown
		}
		if real, rerr := filepath.EvalSymlinks(filepath.Join(append([]string{esc.target}, esc.rest...)...)); rerr == nil {
			return "", "", fmt.Errorf("%s leads to %s, outside the project", abs, name(real, filepath.Join(append([]string{esc.shown}, esc.rest...)...)))
		}
		if real, rerr := filepath.EvalSymlinks(esc.target); rerr == nil {
			return "", "", fmt.Errorf("%s leads to %s, outside the project", abs, name(real, esc.shown))
		}
		return "", "", fmt.Errorf("%s: %s is a link to nothing", abs, esc.link)
	case errors.As(err, &dangling):
		return "", "", fmt.Errorf("%s: %s is a link to nothing", abs, dangling.link)
	case err != nil:
		return "", "", fmt.Errorf("resolve %s: %w", abs, err)
	case missing:
		return abs, name, nil
	}
	return filepath.Join(w.Root, filepath.FromSlash(name)), name, nil
}

// escapeError is a link on the way of a path that leads out of the project: link is the link's
// absolute path, target where it leads (absolute, cleaned), shown the same place as the shown
// tree names it (a relative target taken from the link's shown folder), absolute whether the
// link's own target is an absolute path, and rest the names after it.
type escapeError struct {
	link, target, shown string
	absolute            bool
	rest                []string
}

func (e *escapeError) Error() string { return e.link + " leads outside the project" }

// danglingError is a link on the way of a path that leads to nothing: link is its absolute path.
type danglingError struct{ link string }

func (e *danglingError) Error() string { return e.link + " is a link to nothing" }

// maxLinks bounds the links [Workspace.follow] follows in one path (Linux's own limit).
const maxLinks = 40

// follow resolves name (relative to the root, '/'-separated, cleaned) through the root one name
// at a time: each link met is read ([os.Root.Readlink]) and its target, relative to the link's
// folder or absolute, taken in its place; a target outside the project is an *escapeError. It
// returns the path with no link in it, relative to the root ("." for the root), and whether it
// exists: when a name on the way does not exist (or cannot be looked at), the rest is appended
// as given and missing is true; when that name came from a link's target, the link leads to
// nothing (a *danglingError). Nothing is opened but through the root, and what follow answers is
// a name only: a later change of the folders cannot make an open of it leave the root.
func (w *Workspace) follow(name string) (real string, missing bool, err error) {
	if k := w.knownFor(); k != nil && (k.files[name] != nil || k.dirs[name]) {
		return name, false, nil // no link on the way: the workspace writes none
	}
	type part struct{ name, via string } // via: the link whose target gave the name
	var parts []part
	split := func(p, via string) []part {
		var out []part
		for _, n := range strings.Split(p, "/") {
			if n != "" && n != "." {
				out = append(out, part{n, via})
			}
		}
		return out
	}
	parts = split(name, "")
	done, links := "", 0
	for len(parts) > 0 {
		c := parts[0]
		parts = parts[1:]
		next := path.Join(done, c.name)
		fi, err := w.root.Lstat(next)
		if err != nil {
			if c.via != "" && errors.Is(err, fs.ErrNotExist) {
				return "", false, &danglingError{link: c.via}
			}
			for _, p := range parts {
				next = path.Join(next, p.name)
			}
			return next, true, nil
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > maxLinks {
			return "", false, fmt.Errorf("more than %d links on the way: %w", maxLinks, syscall.ELOOP)
		}
		link := filepath.Join(w.Root, filepath.FromSlash(next))
		target, err := w.root.Readlink(next)
		if err != nil {
			return "", false, err
		}
		absolute, shown := filepath.IsAbs(target), filepath.Join(w.Root, filepath.FromSlash(done), target)
		if absolute {
			target = filepath.Clean(target)
			shown = target
		} else {
			// done has no link in it, so ".." in the target is its parent folder, taken from
			// the folder the link really is in (realRoot: the kernel climbs from there, also
			// when the project's own path goes through a link).
			target = filepath.Join(w.realRoot, filepath.FromSlash(done), target)
		}
		var in string
		switch {
		case within(w.Root, target):
			in, _ = filepath.Rel(w.Root, target)
		case within(w.realRoot, target):
			in, _ = filepath.Rel(w.realRoot, target)
		case within(w.hostRoot, target):
			in, _ = filepath.Rel(w.hostRoot, target)
		default:
			var rest []string
			for _, p := range parts {
				rest = append(rest, p.name)
			}
			return "", false, &escapeError{link: link, target: target, shown: shown, absolute: absolute, rest: rest}
		}
		parts = append(split(filepath.ToSlash(in), link), parts...)
		done = ""
	}
	if done == "" {
		done = "."
	}
	return done, false, nil
}

// within reports whether path is root or below it.
func within(root, path string) bool {
	return path == root || strings.HasPrefix(path, root+string(filepath.Separator))
}

// readDir reads the folder name (relative to the root) through the root, its entries sorted by
// name. A named pipe, socket or device put in the folder's place is refused, never waited on.
func (w *Workspace) readDir(name string) ([]fs.DirEntry, error) {
	if readHook != nil && w.call != nil {
		readHook(w.call)
	}
	if err := w.alive(); err != nil {
		return nil, err
	}
	f, fi, err := w.openChecked(name, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !fi.IsDir() {
		return nil, syscall.ENOTDIR
	}
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// walk calls fn for every regular file below the folder abs (its name relative to the root is
// name; both as [Workspace.resolve] returned them), in lexical order, with its absolute path as
// the walk reached it (abs joined with the names on the way), its name relative to the root
// (with no link in it, to open through the root) and its path relative to abs, '/'-separated.
// Like grep -R it follows a link to a folder inside the project (the files below are named
// through the link) and a link to a file inside it; a link leading outside the project, or to
// nothing, is not followed, nor one to a folder the walk is already inside (a cycle). Named
// pipes, sockets and devices are left out. Every folder is read through the root. An error
// reading a folder, or fn's error, ends the walk with it.
func (w *Workspace) walk(abs, name string, fn func(abs, name, rel string) error) error {
	if _, err := w.dir(); err != nil {
		return err
	}
	if k := w.knownFor(); k != nil && k.dirs[name] {
		return w.walkKnown(k, abs, name, fn)
	}
	inside := map[string]bool{} // the folders on the way down, by their names with no link
	var visit func(abs, name, rel string) error
	visit = func(abs, name, rel string) error {
		inside[name] = true
		defer delete(inside, name)
		entries, err := w.readDir(name)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := w.alive(); err != nil {
				return err
			}
			p, n, r := filepath.Join(abs, e.Name()), path.Join(name, e.Name()), path.Join(rel, e.Name())
			mode := e.Type()
			if mode&fs.ModeSymlink != 0 {
				real, missing, err := w.follow(n)
				if err != nil || missing {
					continue // a link to nothing, or leading outside the project
				}
				fi, err := w.root.Lstat(real)
				if err != nil {
					continue
				}
				mode, n = fi.Mode().Type(), real
			}
			switch {
			case mode&fs.ModeDir != 0:
				if inside[n] {
					continue // a link back to a folder the walk is in
				}
				if err := visit(p, n, r); err != nil {
					return err
				}
			case mode == 0:
				if err := fn(p, n, r); err != nil {
					return err
				}
			}
			// Anything else is a named pipe, a socket or a device: left out.
		}
		return nil
	}
	return visit(abs, name, "")
}

// Run runs one tool call for real in the sandbox and returns its result as the session inserts
// it (ids, brackets, stubs, caps, diffs, search stubs: spec 3.2.0 §1-§6). A failing call is an
// error answer, not a Go error: the model sees it. recall is an unknown tool when the session's
// measures leave it out of the tool list (§4, §10.4).
func (w *Workspace) Run(s *hygiene.Session, tool string, raw json.RawMessage) string {
	out, _ := w.RunWithin(context.Background(), DefaultToolTimeout, s, tool, raw)
	return out
}

// DefaultToolTimeout bounds the wall time of one tool call when the run gives no other bound
// (lab run --tool-timeout).
const DefaultToolTimeout = 30 * time.Second

// StoppedError is a tool call stopped before it ended: it ran past its own time limit, the
// live turn's time limit ran out, or the run was stopped (Ctrl-C, SIGTERM). The model reads
// [StoppedError.Text] as the call's result.
type StoppedError struct {
	// Tool is the tool's name; Limit the call's own time limit.
	Tool  string
	Limit time.Duration
	// Parent is the error of the context the call ran in (the turn's or the run's) when that
	// ended first: [context.DeadlineExceeded] for the turn's time limit, [context.Canceled] for
	// a stopped run; nil when the call's own limit stopped it.
	Parent error
}

// Text is the result as the model reads it, in the shape of a killed command's line
// ([ShellResult.Text]): "(stopped: the grep call ran past its time limit of 30s)".
func (e *StoppedError) Text() string {
	switch {
	case errors.Is(e.Parent, context.DeadlineExceeded):
		return fmt.Sprintf("(stopped: the %s call ran past the turn's time limit)", e.Tool)
	case e.Parent != nil:
		return fmt.Sprintf("(stopped: the %s call was stopped with the run)", e.Tool)
	}
	return fmt.Sprintf("(stopped: the %s call ran past its time limit of %s)", e.Tool, e.Limit)
}

func (e *StoppedError) Error() string { return strings.Trim(e.Text(), "()") }

// Unwrap returns the context's error: [context.DeadlineExceeded] or [context.Canceled].
func (e *StoppedError) Unwrap() error {
	if e.Parent != nil {
		return e.Parent
	}
	return context.DeadlineExceeded
}

// RunWithin runs one tool call as [Workspace.Run] does, within limit (0: no limit of its own)
// and ctx (the live turn's time limit, the run's stop): every walk over folders and every read
// checks the call's deadline, so a search of a huge tree or a read of a slow disk returns once
// the limit passes. A call stopped so answers [StoppedError.Text] and returns the
// *[StoppedError] too; a call that ended is never reported stopped (err is nil). What the
// deadline cannot cut is one system call the kernel blocks in (a hung network filesystem): named
// pipes and devices, which could block, are never opened.
func (w *Workspace) RunWithin(ctx context.Context, limit time.Duration, s *hygiene.Session, tool string, raw json.RawMessage) (string, error) {
	call, cancel := ctx, context.CancelFunc(func() {})
	if limit > 0 {
		call, cancel = context.WithTimeout(ctx, limit)
	}
	defer cancel()
	w.call = call
	defer func() { w.call = nil }()
	out, err := w.run(s, tool, raw)
	if err != nil && call.Err() != nil {
		stop := &StoppedError{Tool: tool, Limit: limit, Parent: ctx.Err()}
		return s.Result(stop.Text()), stop
	}
	if err != nil {
		return s.Result("Error: " + err.Error()), nil
	}
	return out, nil
}

// MaxFileBytes bounds the files the tools read and write, in bytes (10 MiB): a read, edit or
// search of a larger file, and a write or edit whose content would be larger, is refused with
// the absolute path, so that no tool call can fill the memory or the disk.
const MaxFileBytes = 10 << 20

// errTooLarge marks a file larger than [MaxFileBytes].
var errTooLarge = errors.New("too large")

// errNotRegular marks a named pipe, a socket or a device: the tools open regular files and
// folders only, so that no call waits for a pipe's other end or reads a device without end.
var errNotRegular = errors.New("not a regular file")

// notRegular describes a file that is neither a regular file nor a folder, wrapping
// errNotRegular; nil for a regular file or a folder.
func notRegular(mode fs.FileMode) error {
	var kind string
	switch t := mode.Type(); {
	case t == 0 || t&fs.ModeDir != 0:
		return nil
	case t&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case t&fs.ModeSocket != 0:
		kind = "a socket"
	case t&fs.ModeDevice != 0:
		kind = "a device"
	default:
		kind = "a special file"
	}
	return fmt.Errorf("%s, %w: the tools open only files and folders", kind, errNotRegular)
}

// openChecked opens name (relative to the root, as [Workspace.resolve] returns it) through the
// root ([Workspace.dir]: no link followed out of the project) with flag and [openNoBlock], so a
// named pipe cannot make it wait, and checks the opened file: a named pipe, socket or device is
// refused ([errNotRegular]). Where there is no O_NONBLOCK the type is looked at before the open
// too. A folder opens (read-only); the caller checks for one.
func (w *Workspace) openChecked(name string, flag int) (*os.File, fs.FileInfo, error) {
	root, err := w.dir()
	if err != nil {
		return nil, nil, err
	}
	if openNoBlock == 0 {
		if fi, err := root.Stat(name); err == nil {
			if err := notRegular(fi.Mode()); err != nil {
				return nil, nil, err
			}
		}
	}
	// In a folder the workspace knows (no link on the way), the file is opened by name in the
	// folder opened once.
	if d := path.Dir(name); w.known != nil && d != "." && w.known.dirs[d] {
		if root, err = w.folder(d, false); err != nil {
			return nil, nil, err
		}
		name = path.Base(name)
	}
	f, err := root.OpenFile(name, flag|openNoBlock, 0o644)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = notRegular(fi.Mode())
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// readFile reads the file name (relative to the root) through the root, refusing one larger
// than [MaxFileBytes], a folder ("is a directory") and a named pipe, socket or device
// ([errNotRegular]).
func (w *Workspace) readFile(name string) ([]byte, error) {
	if k := w.knownFor(); k != nil && k.files[name] != nil {
		return w.readKnown(k.files[name])
	}
	f, fi, err := w.openChecked(name, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.IsDir() {
		return nil, syscall.EISDIR
	}
	if fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("the file is %d bytes, more than the %d the tools read: %w", fi.Size(), MaxFileBytes, errTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(&callReader{w: w, r: f}, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("the file is more than the %d bytes the tools read: %w", MaxFileBytes, errTooLarge)
	}
	return data, nil
}

// readChunk is the most [callReader] reads at once, in bytes (64 KiB).
const readChunk = 64 << 10

// grepCheckLines is how many lines grep matches between two checks of the call's time limit.
const grepCheckLines = 4096

// readHook, when set (by tests), is called before each folder and each chunk of a file a tool
// reads, with the call's context: a slow disk, played in a test.
var readHook func(ctx context.Context)

// callReader reads r at most [readChunk] bytes at a time, checking before each chunk that the
// tool call under way is still within its time limit ([Workspace.alive]).
type callReader struct {
	w *Workspace
	r io.Reader
}

func (c *callReader) Read(p []byte) (int, error) {
	if readHook != nil && c.w.call != nil {
		readHook(c.w.call)
	}
	if err := c.w.alive(); err != nil {
		return 0, err
	}
	if len(p) > readChunk {
		p = p[:readChunk]
	}
	return c.r.Read(p)
}

// writeFile writes data to the file name (relative to the root) through the root, created when
// there is none (its folders too), refusing a named pipe, a socket or a device ([errNotRegular])
// instead of waiting on it.
func (w *Workspace) writeFile(name string, data []byte) error {
	err := w.writeFolder(name, data)
	if err != nil {
		w.forget()
		return err
	}
	if w.known != nil && !w.known.put(name, data) {
		w.forget()
	}
	w.made = nil
	return nil
}

// writeFolder is writeFile in the folder alone.
func (w *Workspace) writeFolder(name string, data []byte) error {
	root, err := w.dir()
	if err != nil {
		return err
	}
	if w.known == nil || !w.known.dirs[path.Dir(name)] { // a folder it knows is there
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
	}
	f, fi, err := w.openChecked(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		f.Close()
		return syscall.EISDIR
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// checkSize refuses content larger than [MaxFileBytes].
func checkSize(abs string, n int) error {
	if n > MaxFileBytes {
		return fmt.Errorf("%s: the content would be %d bytes, more than the %d the tools write", abs, n, MaxFileBytes)
	}
	return nil
}

// resolveAndRead resolves path ([Workspace.resolve]) and reads the file it names
// ([Workspace.readFile]); a file that cannot be read is an error "op <abs>: why".
func (w *Workspace) resolveAndRead(op, path string) (abs, name string, data []byte, err error) {
	abs, name, err = w.resolve(path)
	if err != nil {
		return "", "", nil, err
	}
	data, err = w.readFile(name)
	if err != nil {
		return "", "", nil, fmt.Errorf("%s %s: %w", op, abs, unwrapPathError(err))
	}
	return abs, name, data, nil
}

func (w *Workspace) read(s *hygiene.Session, a CallArgs) (string, error) {
	abs, _, data, err := w.resolveAndRead("read", a.Path)
	if err != nil {
		return "", err
	}
	return s.Read(hygiene.ReadRequest{Path: a.Path, AbsPath: abs, Content: data, Offset: a.Offset, Limit: a.Limit}), nil
}

func (w *Workspace) list(s *hygiene.Session, raw json.RawMessage, a CallArgs) (string, error) {
	abs, name, err := w.resolve(a.Path)
	if err != nil {
		return "", err
	}
	if fi, err := w.stat(name); err != nil {
		return "", fmt.Errorf("list %s: %w", abs, unwrapPathError(err))
	} else if err := notRegular(fi.Mode()); err != nil {
		return "", fmt.Errorf("list %s: %w", abs, err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("list %s: not a directory (read shows a file)", abs)
	}
	// Like find: links are listed, not followed; every folder is read through the root.
	var lines []string
	var visit func(abs, name string) error
	if k := w.knownFor(); k != nil && k.dirs[name] {
		visit = func(abs, name string) error {
			for _, e := range k.entries(name) {
				if err := w.alive(); err != nil {
					return err
				}
				p := filepath.Join(abs, e.name)
				if !e.dir {
					lines = append(lines, p)
					continue
				}
				lines = append(lines, p+"/")
				if err := visit(p, path.Join(name, e.name)); err != nil {
					return err
				}
			}
			return nil
		}
	} else {
		visit = w.listFolder(&lines)
	}
	if err = visit(abs, name); err != nil {
		return "", fmt.Errorf("list %s: %w", abs, unwrapPathError(err))
	}
	if len(lines) == 0 {
		return s.Search("list", raw, fmt.Sprintf("%s is empty.", abs)), nil
	}
	return s.Search("list", raw, strings.Join(lines, "\n")), nil
}

// listFolder returns list's walk of the folder, appending every entry below it to lines.
func (w *Workspace) listFolder(lines *[]string) func(abs, name string) error {
	var visit func(abs, name string) error
	visit = func(abs, name string) error {
		entries, err := w.readDir(name)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := w.alive(); err != nil {
				return err
			}
			if notRegular(e.Type()) != nil && e.Type()&fs.ModeSymlink == 0 {
				continue // a named pipe, socket or device: the tools show only files and folders
			}
			// §1: a search's results (a listing among them, §6) name the absolute path.
			p := filepath.Join(abs, e.Name())
			if !e.IsDir() {
				*lines = append(*lines, p)
				continue
			}
			*lines = append(*lines, p+"/")
			if err := visit(p, path.Join(name, e.Name())); err != nil {
				return err
			}
		}
		return nil
	}
	return visit
}

// glob answers the files under a.Path whose path relative to it matches a.Pattern
// (github.com/bmatcuk/doublestar syntax), each by its absolute path (spec 3.2.0 §1: a search's
// results name the absolute path), sorted; like list and grep it is deduplicated by result (§6,
// loop.json dedupe.by_result). A pattern may start with a folder, relative or absolute (§11:
// absolute paths are accepted): the folder is resolved in the sandbox like any path. The files
// are those [Workspace.walk] meets: a link to a folder inside the project is followed (its files
// named through the link), one leading outside is not, so no name outside the project is shown;
// named pipes, sockets and devices are left out.
func (w *Workspace) glob(s *hygiene.Session, raw json.RawMessage, a CallArgs) (string, error) {
	if a.Pattern == "" {
		return "", fmt.Errorf("glob: pattern is required")
	}
	base, pattern := doublestar.SplitPattern(filepath.ToSlash(a.Pattern))
	if !doublestar.ValidatePattern(pattern) {
		return "", fmt.Errorf("glob: %q is not a valid pattern", a.Pattern)
	}
	dir := a.Path
	if base != "." {
		if filepath.IsAbs(base) || strings.HasPrefix(base, "~") {
			dir = base
		} else {
			dir = filepath.Join(a.Path, base)
		}
	}
	abs, name, err := w.resolve(dir)
	if err != nil {
		return "", err
	}
	if fi, err := w.stat(name); err != nil {
		return "", fmt.Errorf("glob %s: %w", abs, unwrapPathError(err))
	} else if !fi.IsDir() {
		return "", fmt.Errorf("glob %s: not a directory", abs)
	}
	var out []string
	err = w.walk(abs, name, func(p, _, rel string) error {
		if doublestar.MatchUnvalidated(pattern, rel) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("glob %s: %w", abs, unwrapPathError(err))
	}
	if len(out) == 0 {
		return s.Search("glob", raw, "No files match."), nil
	}
	slices.Sort(out)
	return s.Search("glob", raw, strings.Join(out, "\n")), nil
}

// grep searches a file, or the files [Workspace.walk] meets under a folder (links to folders
// inside the project followed, named pipes, sockets and devices left out, files over
// [MaxFileBytes] not searched), and names each match by its absolute path (spec 3.2.0 §1: a
// search's results name the absolute path). A path that is a named pipe, socket or device is an
// error.
func (w *Workspace) grep(s *hygiene.Session, raw json.RawMessage, a CallArgs) (string, error) {
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return "", fmt.Errorf("pattern: %w", err)
	}
	abs, name, err := w.resolve(a.Path)
	if err != nil {
		return "", err
	}
	// Every match starts with the pattern's literal prefix, when it has one: a file or a line
	// without it holds no match, and is not run through the pattern.
	prefix, _ := re.LiteralPrefix()
	bprefix := []byte(prefix)
	// The answer is written as it is found, one "path:line: text" a match, with no copy of a
	// file's content or of a line on the way.
	var out strings.Builder
	match := func(p string, n int) {
		if out.Len() > 0 {
			out.WriteByte('\n')
		}
		out.WriteString(p)
		out.WriteByte(':')
		out.WriteString(strconv.Itoa(n))
		out.WriteString(": ")
	}
	search := func(p, name string) error {
		if k := w.knownFor(); k != nil && k.files[name] != nil {
			c := k.files[name]
			if err := w.alive(); err != nil {
				return err
			}
			if len(c.data) > MaxFileBytes {
				return nil // not searched
			}
			for _, l := range c.grep(re, prefix) {
				match(p, l.n)
				out.WriteString(l.text)
			}
			return nil
		}
		data, err := w.readFile(name)
		if errors.Is(err, errTooLarge) {
			return nil // not searched
		}
		if err != nil {
			return err
		}
		if prefix != "" && !bytes.Contains(data, bprefix) {
			return nil
		}
		for n, line := range lines(data, bytes.IndexByte) {
			if n%grepCheckLines == 0 {
				if err := w.alive(); err != nil {
					return err
				}
			}
			if prefix != "" && !bytes.Contains(line, bprefix) {
				continue
			}
			if re.Match(line) {
				match(p, n)
				out.Write(line)
			}
		}
		return nil
	}
	fi, err := w.stat(name)
	switch {
	case err != nil:
	case fi.IsDir():
		err = w.walk(abs, name, func(p, name, _ string) error { return search(p, name) })
	default:
		err = search(abs, name)
	}
	if err != nil {
		return "", fmt.Errorf("grep %s: %w", abs, unwrapPathError(err))
	}
	if out.Len() == 0 {
		return s.Search("grep", raw, "No matches."), nil
	}
	return s.Search("grep", raw, out.String()), nil
}

func (w *Workspace) edit(s *hygiene.Session, a CallArgs) (string, error) {
	abs, name, data, err := w.resolveAndRead("edit", a.Path)
	if err != nil {
		return "", err
	}
	old := string(data)
	switch n := strings.Count(old, a.OldString); {
	case a.OldString == "":
		return "", fmt.Errorf("edit %s: old_string is empty", abs)
	case n == 0:
		return "", fmt.Errorf("edit %s: old_string not found", abs)
	case n > 1:
		return "", fmt.Errorf("edit %s: old_string occurs %d times; give more context so it occurs once", abs, n)
	}
	updated := strings.Replace(old, a.OldString, a.NewString, 1)
	if err := checkSize(abs, len(updated)); err != nil {
		return "", fmt.Errorf("edit %w", err)
	}
	if err := w.writeFile(name, []byte(updated)); err != nil {
		return "", fmt.Errorf("edit %s: %w", abs, unwrapPathError(err))
	}
	return s.Edited(a.Path, []byte(updated), hunks(old, updated)), nil
}

// write writes a file whole (spec 3.2.0 §5): a new file (its folders created) answers Created
// with its line count; an existing file answers with the diff of its old content to the new.
func (w *Workspace) write(s *hygiene.Session, a CallArgs) (string, error) {
	if a.Content == nil {
		return "", fmt.Errorf("write: content is required")
	}
	abs, name, err := w.resolve(a.Path)
	if err != nil {
		return "", err
	}
	content := []byte(*a.Content)
	if err := checkSize(abs, len(content)); err != nil {
		return "", fmt.Errorf("write %w", err)
	}
	old, exists, err := w.readIfExists(name)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", abs, err)
	}
	if err := w.writeFile(name, content); err != nil {
		return "", fmt.Errorf("write %s: %w", abs, unwrapPathError(err))
	}
	if !exists {
		return s.Created(a.Path, content), nil
	}
	return s.Edited(a.Path, content, hunks(string(old), *a.Content)), nil
}

// readIfExists reads the file name (relative to the root) through the root: its content and
// true, or false when there is no such file. A directory is an error.
func (w *Workspace) readIfExists(name string) ([]byte, bool, error) {
	data, err := w.readFile(name)
	switch {
	case err == nil:
		return data, true, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case errors.Is(err, syscall.EISDIR):
		return nil, false, errors.New("is a directory")
	}
	return nil, false, unwrapPathError(err)
}

// stat describes the file name (relative to the root), looked at through the root, links inside
// the project followed.
func (w *Workspace) stat(name string) (fs.FileInfo, error) {
	if k := w.knownFor(); k != nil {
		if fi, ok := k.stat(name); ok {
			return fi, nil
		}
	}
	root, err := w.dir()
	if err != nil {
		return nil, err
	}
	return root.Stat(name)
}

// multiedit applies several replacements to one file in order (spec 3.2.0 §5): each old_string
// must occur exactly once in the content as the earlier edits left it. All or nothing: the file
// is written only when every edit applies. Answers with the diff of the whole change.
func (w *Workspace) multiedit(s *hygiene.Session, a CallArgs) (string, error) {
	abs, name, err := w.resolve(a.Path)
	if err != nil {
		return "", err
	}
	if len(a.Edits) == 0 {
		return "", fmt.Errorf("multiedit %s: no edits", abs)
	}
	data, err := w.readFile(name)
	if err != nil {
		return "", fmt.Errorf("multiedit %s: %w", abs, unwrapPathError(err))
	}
	old := string(data)
	cur := old
	for i, e := range a.Edits {
		switch n := strings.Count(cur, e.OldString); {
		case e.OldString == "":
			return "", fmt.Errorf("multiedit %s: edit %d: old_string is empty; the file is unchanged", abs, i+1)
		case n == 0:
			return "", fmt.Errorf("multiedit %s: edit %d: old_string not found; the file is unchanged", abs, i+1)
		case n > 1:
			return "", fmt.Errorf("multiedit %s: edit %d: old_string occurs %d times; give more context so it occurs once; the file is unchanged", abs, i+1, n)
		}
		cur = strings.Replace(cur, e.OldString, e.NewString, 1)
	}
	if err := checkSize(abs, len(cur)); err != nil {
		return "", fmt.Errorf("multiedit %w; the file is unchanged", err)
	}
	if err := w.writeFile(name, []byte(cur)); err != nil {
		return "", fmt.Errorf("multiedit %s: %w", abs, unwrapPathError(err))
	}
	return s.Edited(a.Path, []byte(cur), hunks(old, cur)), nil
}

// fileState is a file's content as a patch being applied sees it.
type fileState struct {
	data   []byte
	exists bool
}

// applyPatch applies an apply_patch patch ([ParsePatch]) all or nothing (spec 3.2.0 §5): every
// operation is worked out in memory first, each seeing the files as the earlier ones left them;
// only when all apply are the files written (and restored if a write fails). Add needs a new file,
// Delete and Update an existing one, and a Move its destination free. Answers with
// [hygiene.Session.Patched]: one change per operation in the patch's order, each named by the
// path as the patch gave it (a move as "old → new", with the diff of the content). Errors name
// the absolute path.
func (w *Workspace) applyPatch(s *hygiene.Session, a CallArgs) (string, error) {
	ops, err := ParsePatch(a.Patch)
	if err != nil {
		return "", fmt.Errorf("apply_patch: %w; no file was changed", err)
	}
	// The files are keyed by their names relative to the root ([Workspace.resolve]), which
	// name the same file the same way, and opened through the root.
	files := map[string]*fileState{} // name → state after the operations so far
	orig := map[string]fileState{}   // name → state before the patch
	labels := map[string]string{}    // name → the absolute path answers name
	var order []string               // names in the order first touched
	get := func(abs, name string) (*fileState, error) {
		if st, ok := files[name]; ok {
			return st, nil
		}
		data, exists, err := w.readIfExists(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", abs, err)
		}
		files[name] = &fileState{data: data, exists: exists}
		orig[name] = *files[name]
		labels[name] = abs
		order = append(order, name)
		return files[name], nil
	}
	fail := func(err error) (string, error) {
		return "", fmt.Errorf("apply_patch: %w; no file was changed", err)
	}
	var changes []hygiene.FileChange
	for _, op := range ops {
		if err := w.alive(); err != nil {
			return fail(err)
		}
		abs, name, err := w.resolve(op.Path)
		if err != nil {
			return fail(err)
		}
		st, err := get(abs, name)
		if err != nil {
			return fail(err)
		}
		switch op.Kind {
		case PatchAdd:
			if st.exists {
				return fail(fmt.Errorf("Add File %s: the file exists (Update File changes it)", abs))
			}
			var content []byte
			if len(op.Lines) > 0 {
				content = []byte(strings.Join(op.Lines, "\n") + "\n")
			}
			*st = fileState{data: content, exists: true}
			changes = append(changes, hygiene.FileChange{Path: op.Path, Kind: hygiene.Created, Content: content})
		case PatchDelete:
			if !st.exists {
				return fail(fmt.Errorf("Delete File %s: no such file", abs))
			}
			*st = fileState{}
			changes = append(changes, hygiene.FileChange{Path: op.Path, Kind: hygiene.Deleted})
		case PatchUpdate:
			if !st.exists {
				return fail(fmt.Errorf("Update File %s: no such file", abs))
			}
			old := string(st.data)
			// A file with CRLF line ends keeps them: the patch's lines (read with "\n") are
			// matched and written in the file's own convention.
			eol := "\n"
			if strings.Contains(old, "\r\n") {
				eol = "\r\n"
			}
			lines := hygiene.Lines(strings.ReplaceAll(old, "\r\n", "\n"))
			updated, err := applyHunks(lines, op.Hunks)
			if err != nil {
				return fail(fmt.Errorf("Update File %s: %w", abs, err))
			}
			var content []byte
			if len(updated) > 0 {
				text := strings.Join(updated, eol)
				if old == "" || strings.HasSuffix(old, "\n") {
					text += eol
				}
				content = []byte(text)
			}
			label := op.Path
			dst := st
			if op.MoveTo != "" {
				to, toName, err := w.resolve(op.MoveTo)
				if err != nil {
					return fail(err)
				}
				if toName != name {
					if dst, err = get(to, toName); err != nil {
						return fail(err)
					}
					if dst.exists {
						return fail(fmt.Errorf("Move to %s: the file exists", to))
					}
					*st = fileState{}
				}
				label = op.Path + " → " + op.MoveTo
			}
			*dst = fileState{data: content, exists: true}
			changes = append(changes, hygiene.FileChange{Path: label, Kind: hygiene.Updated, Content: content, Diff: Hunks(old, string(content))})
		}
	}
	if err := w.commit(order, labels, files, orig); err != nil {
		return "", fmt.Errorf("apply_patch: %w", err)
	}
	return s.Patched(changes), nil
}

// commit writes the patched files (names relative to the root, in the order first touched;
// labels gives the absolute path each is named by) through the root and deletes the deleted
// ones. When one fails it puts back every file it had changed and says so.
func (w *Workspace) commit(order []string, labels map[string]string, files map[string]*fileState, orig map[string]fileState) error {
	put := func(name string, st fileState) error {
		if !st.exists {
			err := w.removeFile(name)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("delete %s: %w", labels[name], unwrapPathError(err))
			}
			return nil
		}
		if err := w.writeFile(name, st.data); err != nil {
			return fmt.Errorf("write %s: %w", labels[name], unwrapPathError(err))
		}
		return nil
	}
	for _, name := range order {
		if err := checkSize(labels[name], len(files[name].data)); err != nil {
			return fmt.Errorf("%w; no file was changed", err)
		}
	}
	for i, name := range order {
		st := *files[name]
		if o := orig[name]; o.exists == st.exists && bytes.Equal(o.data, st.data) {
			continue
		}
		if err := put(name, st); err != nil {
			for _, back := range order[:i+1] {
				_ = put(back, orig[back])
			}
			return fmt.Errorf("%w; the files were put back as they were", err)
		}
	}
	return nil
}

// Hunks returns the unified diff of old → new with three lines of context, hunks only: no
// ---/+++ header, since the path is in the result's bracket (spec 3.2.0 §5).
func Hunks(old, new string) string {
	d := udiff.Unified("a", "b", old, new)
	if i := strings.Index(d, "@@"); i >= 0 {
		d = d[i:]
	}
	return strings.TrimSuffix(d, "\n")
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Outside applies a change made outside the session (a scenario's `outside:` step): content
// written to the file at p (a path as a tool call gives it), or, with del, that file deleted.
// Errors name the absolute path.
func (w *Workspace) Outside(p, content string, del bool) error {
	abs, name, err := w.resolve(p)
	if err != nil {
		return fmt.Errorf("outside change: %w", err)
	}
	if del {
		if err := w.removeFile(name); err != nil {
			return fmt.Errorf("outside change: %s: %w", abs, unwrapPathError(err))
		}
		return nil
	}
	if err := w.writeFile(name, []byte(content)); err != nil {
		return fmt.Errorf("outside change: %s: %w", abs, unwrapPathError(err))
	}
	return nil
}

// Peek reads the file at p (a path as a tool call gives it) for the harness itself, not as a
// tool call: no result is inserted anywhere. It returns the file's text and true, or false when
// there is no such file; an error, naming the absolute path, when p is outside the project or
// cannot be read (a folder).
func (w *Workspace) Peek(p string) (string, bool, error) {
	abs, name, err := w.resolve(p)
	if err != nil {
		return "", false, err
	}
	data, ok, err := w.readIfExists(name)
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", abs, err)
	}
	return string(data), ok, nil
}

// Dir resolves a folder a call names (a path as a tool call gives it, "" for the project root)
// as every tool resolves a path (spec 3.2.0 §11), and returns its absolute path; an error when it
// is outside the project, is not there or is not a folder, naming the absolute path.
func (w *Workspace) Dir(p string) (string, error) {
	abs, name, err := w.resolve(p)
	if err != nil {
		return "", err
	}
	fi, err := w.stat(name)
	if err != nil {
		return "", fmt.Errorf("stat %s: %w", abs, unwrapPathError(err))
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", abs)
	}
	return abs, nil
}

// readKnown is readFile of a file the workspace knows: a copy of its content, the same checks.
func (w *Workspace) readKnown(c *content) ([]byte, error) {
	if err := w.alive(); err != nil {
		return nil, err
	}
	if len(c.data) > MaxFileBytes {
		return nil, fmt.Errorf("the file is %d bytes, more than the %d the tools read: %w", len(c.data), MaxFileBytes, errTooLarge)
	}
	return []byte(c.data), nil
}

// removeFile deletes the file name (relative to the root) through the root, and from what the
// workspace knows.
func (w *Workspace) removeFile(name string) error {
	err := w.root.Remove(name)
	if err != nil || w.known == nil || !w.known.remove(name) {
		w.forget()
	}
	return err
}
