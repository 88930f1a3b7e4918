package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"lab/metrics"
	"lab/plots"
	"lab/report"
)

// writeReport reads a run's results and writes plots/<scenario>-cached-share.{svg,png} and
// report.md beside them; it returns the files written, relative to dir.
func writeReport(dir string) (files []string, err error) {
	man, samples, err := metrics.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	files = []string{metrics.SamplesFile, metrics.ManifestFile}
	if _, err := os.Stat(filepath.Join(dir, "requests.jsonl")); err == nil {
		files = append(files, "requests.jsonl")
	}
	plotFiles := map[string][]string{}
	byScenario := map[string][]metrics.Sample{}
	for _, s := range samples {
		byScenario[s.Scenario] = append(byScenario[s.Scenario], s)
	}
	if err := os.MkdirAll(filepath.Join(dir, "plots"), 0o755); err != nil {
		return files, err
	}
	for _, name := range man.Scenarios {
		ss := byScenario[name]
		if len(ss) == 0 {
			continue
		}
		p, err := plots.CachedShare(name, ss)
		if errors.Is(err, plots.ErrNoSamples) {
			continue
		}
		if err != nil {
			return files, fmt.Errorf("plot %s: %w", name, err)
		}
		for _, format := range []string{"svg", "png"} {
			rel := filepath.Join("plots", name+"-cached-share."+format)
			if err := writeFile(filepath.Join(dir, rel), func(f *os.File) error {
				return plots.Write(f, p, format, plots.DefaultWidth, plots.DefaultHeight)
			}); err != nil {
				return files, err
			}
			plotFiles[name] = append(plotFiles[name], rel)
			files = append(files, rel)
		}
	}
	if err := writeFile(filepath.Join(dir, "report.md"), func(f *os.File) error {
		return report.Markdown(f, man, report.Summarize(samples), plotFiles)
	}); err != nil {
		return files, err
	}
	return append(files, "report.md"), nil
}

// writeFile creates path, lets write fill it and closes it, keeping the close error.
func writeFile(path string, write func(*os.File) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
	}()
	if err := write(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
