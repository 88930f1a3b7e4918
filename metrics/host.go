package metrics

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Host describes the machine a run ran on, in [Manifest].Host: what a prefill time depends on
// besides the model and the server. A field the lab could not read is null ("" for the CPU
// model), never a guess.
type Host struct {
	// CPUModel is the processor's name, the "model name" line of /proc/cpuinfo (Linux); ""
	// (omitted) where unreadable. A run merged from shards on different machines joins the
	// distinct names with ", ".
	CPUModel string `json:"cpu_model,omitempty"`
	// LogicalCores is the number of logical CPUs the lab process could use (runtime.NumCPU);
	// nil in a run merged from shards whose machines differ.
	LogicalCores *int `json:"logical_cores"`
	// OS and Arch are runtime.GOOS and runtime.GOARCH, such as "linux" and "amd64".
	OS   string `json:"os"`
	Arch string `json:"arch"`
	// LoadStart and LoadEnd are the system load averages when the run started and when it
	// ended (/proc/loadavg); nil where unreadable (not Linux), LoadEnd nil while the run runs
	// or if it died.
	LoadStart *LoadAverage `json:"load_start"`
	LoadEnd   *LoadAverage `json:"load_end"`
}

// LoadAverage is the system load average, the number of processes running or waiting to run
// averaged over 1, 5 and 15 minutes, the first three fields of /proc/loadavg.
type LoadAverage struct {
	One     float64 `json:"1m"`
	Five    float64 `json:"5m"`
	Fifteen float64 `json:"15m"`
}

// String returns "0.52, 0.41, 0.30" (1, 5 and 15 minutes).
func (l LoadAverage) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	return f(l.One) + ", " + f(l.Five) + ", " + f(l.Fifteen)
}

// The files [CurrentHost] and [CurrentLoad] read (Linux).
const (
	cpuinfoPath = "/proc/cpuinfo"
	loadavgPath = "/proc/loadavg"
)

// CurrentHost returns this machine: CPU model, logical cores, OS and architecture, and the load
// average now as LoadStart. Files it cannot read leave their fields unknown.
func CurrentHost() *Host {
	h := &Host{LogicalCores: new(runtime.NumCPU()), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if data, err := os.ReadFile(cpuinfoPath); err == nil {
		h.CPUModel = ParseCPUModel(data)
	}
	h.LoadStart = CurrentLoad()
	return h
}

// CurrentLoad returns the load average now, from /proc/loadavg; nil where it cannot be read or
// parsed.
func CurrentLoad() *LoadAverage {
	data, err := os.ReadFile(loadavgPath)
	if err != nil {
		return nil
	}
	l, err := ParseLoadAvg(data)
	if err != nil {
		return nil
	}
	return l
}

// ParseCPUModel returns the value of the first "model name" line of /proc/cpuinfo's text
// (x86), else of the first "Processor" or "cpu model" line (some ARM and MIPS kernels), trimmed;
// "" when there is none.
func ParseCPUModel(cpuinfo []byte) string {
	found := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		if _, seen := found[k]; !seen {
			found[k] = strings.TrimSpace(v)
		}
	}
	for _, k := range []string{"model name", "Processor", "cpu model"} {
		if v := found[k]; v != "" {
			return v
		}
	}
	return ""
}

// ParseLoadAvg parses the text of /proc/loadavg ("0.52 0.41 0.30 1/123 4567"): its first three
// fields. It returns an error naming the text for anything else.
func ParseLoadAvg(data []byte) (*LoadAverage, error) {
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return nil, fmt.Errorf("%s: %q: want three load averages", loadavgPath, strings.TrimSpace(string(data)))
	}
	var v [3]float64
	for i := range v {
		x, err := strconv.ParseFloat(f[i], 64)
		if err != nil || x < 0 {
			return nil, fmt.Errorf("%s: field %d %q: want a load average", loadavgPath, i+1, f[i])
		}
		v[i] = x
	}
	return &LoadAverage{One: v[0], Five: v[1], Fifteen: v[2]}, nil
}

// SameMachine reports whether a and b are the same kind of machine: CPU model, logical cores, OS
// and architecture equal (two nil hosts are; one nil host is not).
func SameMachine(a, b *Host) bool {
	if a == nil || b == nil {
		return a == b
	}
	cores := func(h *Host) int {
		if h.LogicalCores == nil {
			return -1
		}
		return *h.LogicalCores
	}
	return a.CPUModel == b.CPUModel && cores(a) == cores(b) && a.OS == b.OS && a.Arch == b.Arch
}

// MixedHost returns the host of a run whose parts ran on the machines hosts: the distinct CPU
// models, OSes and architectures joined by ", ", the cores and loads unknown (nil).
func MixedHost(hosts ...*Host) *Host {
	var cpus, oses, arches []string
	for _, h := range hosts {
		if h == nil {
			continue
		}
		cpus = appendNew(cpus, h.CPUModel)
		oses = appendNew(oses, h.OS)
		arches = appendNew(arches, h.Arch)
	}
	return &Host{CPUModel: strings.Join(cpus, ", "), OS: strings.Join(oses, ", "), Arch: strings.Join(arches, ", ")}
}

// mergeHosts merges the hosts of a run's parts ([MergeParts]): when every part ran on the same
// kind of machine, that machine with the load at the start of the part that started first and at
// the end of the part that ended last (nil unless every part ended); otherwise the distinct CPU
// models, OSes and architectures joined by ", ", with the cores and loads unknown. nil when no
// part recorded a host.
func mergeHosts(parts []Part) *Host {
	var hosts []*Host
	var first, last *Part
	ended := true
	for i := range parts {
		p := &parts[i]
		if p.Manifest.Host == nil {
			continue
		}
		hosts = append(hosts, p.Manifest.Host)
		if first == nil || p.Manifest.StartedAt.Before(first.Manifest.StartedAt) {
			first = p
		}
		if p.Manifest.EndedAt.IsZero() {
			ended = false
		} else if last == nil || p.Manifest.EndedAt.After(last.Manifest.EndedAt) {
			last = p
		}
	}
	if len(hosts) == 0 {
		return nil
	}
	same := len(hosts) == len(parts)
	for _, h := range hosts[1:] {
		same = same && SameMachine(hosts[0], h)
	}
	if same {
		h := *first.Manifest.Host
		h.LoadEnd = nil
		if ended && last != nil {
			h.LoadEnd = last.Manifest.Host.LoadEnd
		}
		return &h
	}
	return MixedHost(hosts...)
}
