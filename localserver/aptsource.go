package localserver

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// AptSource is one archive entry of an apt sources file: one suite of one URI, as apt's
// sources.list(5) describes both the one-line format ("deb [signed-by=K] URI SUITE COMP...") and
// the deb822 format (a stanza of Types, URIs, Suites, Components and Signed-By fields).
type AptSource struct {
	// URI is the archive's base address, as the file gives it.
	URI string
	// Suite is the distribution (a codename such as "bookworm", or "bookworm-security").
	Suite string
	// Components are the archive areas ("main", "contrib", ...).
	Components []string
	// SignedBy is the keyring file the entry is verified with; "" when the entry names none.
	SignedBy string
	// File and Line say where the entry is (the line of the stanza's first field, for deb822).
	File string
	Line int
}

// ParseAptSources parses the apt sources file named name (used in errors and to pick the
// format: a name ending in ".sources" is deb822, any other the one-line format) and returns
// its "deb" entries, one per URI and suite; deb-src entries, comments and stanzas switched off
// ("Enabled: no", or another word apt reads as false) are skipped. A malformed entry is an error naming the file and line.
func ParseAptSources(name string, data []byte) ([]AptSource, error) {
	if strings.HasSuffix(name, ".sources") {
		return parseDeb822(name, data)
	}
	var out []AptSource
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == "deb-src" {
			continue
		}
		if f[0] != "deb" {
			return nil, fmt.Errorf("%s:%d: entry type %q is neither deb nor deb-src", name, n, f[0])
		}
		f = f[1:]
		signed := ""
		if len(f) > 0 && strings.HasPrefix(f[0], "[") {
			var opts []string
			for len(f) > 0 {
				o := f[0]
				f = f[1:]
				opts = append(opts, strings.Trim(o, "[]"))
				if strings.HasSuffix(o, "]") {
					break
				}
			}
			for _, o := range opts {
				if k, v, ok := strings.Cut(o, "="); ok && k == "signed-by" {
					signed = v
				}
			}
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("%s:%d: a deb entry needs a URI and a suite", name, n)
		}
		out = append(out, AptSource{URI: f[0], Suite: f[1], Components: f[2:], SignedBy: signed, File: name, Line: n})
	}
	return out, sc.Err()
}

// parseDeb822 parses a deb822 .sources file (see [ParseAptSources]).
func parseDeb822(name string, data []byte) ([]AptSource, error) {
	var out []AptSource
	fields := map[string]string{}
	start, last := 0, ""
	flush := func() error {
		defer func() { fields, start, last = map[string]string{}, 0, "" }()
		if len(fields) == 0 {
			return nil
		}
		if aptFalse(fields["enabled"]) {
			return nil
		}
		deb := false
		for _, t := range strings.Fields(fields["types"]) {
			deb = deb || t == "deb"
		}
		if !deb {
			return nil
		}
		uris, suites := strings.Fields(fields["uris"]), strings.Fields(fields["suites"])
		if len(uris) == 0 || len(suites) == 0 {
			return fmt.Errorf("%s:%d: a deb stanza needs URIs and Suites", name, start)
		}
		for _, u := range uris {
			for _, s := range suites {
				out = append(out, AptSource{URI: u, Suite: s, Components: strings.Fields(fields["components"]),
					SignedBy: strings.TrimSpace(fields["signed-by"]), File: name, Line: start})
			}
		}
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			if err := flush(); err != nil {
				return nil, err
			}
		case strings.HasPrefix(line, "#"):
		case line[0] == ' ' || line[0] == '\t':
			if last == "" {
				return nil, fmt.Errorf("%s:%d: continuation line outside a field", name, n)
			}
			fields[last] += "\n" + strings.TrimSpace(line)
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				return nil, fmt.Errorf("%s:%d: %q is not a Field: value line", name, n, line)
			}
			if start == 0 {
				start = n
			}
			last = strings.ToLower(strings.TrimSpace(k))
			fields[last] = strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// debianSuites are the Debian archive's suite names that a sources entry may give instead of the
// release codename (a machine following stable, or running unstable itself, whose os-release
// names the next release's codename): the same archive, signed by the same keyring.
var debianSuites = []string{"stable", "testing", "unstable", "sid", "oldstable", "oldoldstable"}

// aptFalse reports whether a deb822 boolean field's value is one apt reads as false (apt-pkg's
// StringToBool: no, false, without, off, disable, or the number 0), case aside.
func aptFalse(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "no", "false", "without", "off", "disable", "0":
		return true
	}
	return false
}

// DebianSource picks, from the entries of the machine's apt sources, the Debian archive entry of
// the release codename: suite exactly release (so neither release-security, -updates nor
// -backports), or else one of the suite names stable, testing, unstable (sid), oldstable and
// oldoldstable; component main; a URI whose path names Debian ("/debian") or a Debian archive
// keyring in Signed-By. It returns that entry with Suite "unstable" and Components [main],
// keeping the URI and the keyring. files names what was read, for the error when no entry fits.
func DebianSource(entries []AptSource, release string, files []string) (AptSource, error) {
	if e, ok := debianEntry(entries, func(s string) bool { return release != "" && s == release }); ok {
		return e, nil
	}
	if e, ok := debianEntry(entries, func(s string) bool { return contains(debianSuites, s) }); ok {
		return e, nil
	}
	if release == "" {
		return AptSource{}, fmt.Errorf("find the Debian archive: the machine's release codename is unknown (VERSION_CODENAME in /etc/os-release)")
	}
	return AptSource{}, fmt.Errorf("find the Debian archive: no deb entry of suite %q (or %s) with component main serving Debian in %s", release, strings.Join(debianSuites, ", "), strings.Join(files, ", "))
}

// debianEntry is the first Debian archive entry of component main whose suite suite accepts
// ([DebianSource]), with Suite "unstable" and Components [main].
func debianEntry(entries []AptSource, suite func(string) bool) (AptSource, bool) {
	for _, e := range entries {
		if !suite(e.Suite) || !contains(e.Components, "main") {
			continue
		}
		path := e.URI
		if i := strings.Index(path, "://"); i >= 0 {
			path = path[i+3:]
		}
		if i := strings.IndexByte(path, '/'); i >= 0 {
			path = path[i:]
		} else {
			path = ""
		}
		if !strings.Contains(strings.TrimSuffix(path, "/")+"/", "/debian/") && !strings.Contains(e.SignedBy, "debian-archive-keyring") {
			continue
		}
		e.Suite, e.Components = "unstable", []string{"main"}
		return e, true
	}
	return AptSource{}, false
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// MachineDebianSource reads the apt sources under etc (the machine's is /etc/apt):
// etc/sources.list and etc/sources.list.d/*.list and *.sources, in that order, and returns
// [DebianSource] of their entries for release. A file that cannot be parsed is an error naming
// its line.
func MachineDebianSource(etc, release string) (AptSource, error) {
	files := []string{filepath.Join(etc, "sources.list")}
	for _, pat := range []string{"*.list", "*.sources"} {
		m, _ := filepath.Glob(filepath.Join(etc, "sources.list.d", pat))
		sort.Strings(m)
		files = append(files, m...)
	}
	var all []AptSource
	var read []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return AptSource{}, fmt.Errorf("read apt sources: %w", err)
		}
		read = append(read, f)
		e, err := ParseAptSources(f, b)
		if err != nil {
			return AptSource{}, err
		}
		all = append(all, e...)
	}
	if len(read) == 0 {
		read = files
	}
	return DebianSource(all, release, read)
}

// deb822 formats s as a deb822 stanza for a private sources.list.d.
func (s AptSource) deb822() string {
	b := "Types: deb\nURIs: " + s.URI + "\nSuites: " + s.Suite + "\nComponents: " + strings.Join(s.Components, " ") + "\n"
	if s.SignedBy != "" {
		b += "Signed-By: " + strings.ReplaceAll(s.SignedBy, "\n", "\n ") + "\n" // an inline key's lines continue the field
	}
	return b
}

// osRelease returns VERSION_CODENAME of the os-release file at path ("" when it has none).
func osRelease(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && k == "VERSION_CODENAME" {
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return ""
}
