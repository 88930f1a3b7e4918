package metrics_test

import (
	"fmt"
	"os"
	"path/filepath"

	"lab/metrics"
)

// Write samples to samples.parquet as they are measured, close the sink on every path, and read
// them back.
func ExampleCreateParquet() {
	dir, err := os.MkdirTemp("", "run")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, metrics.SamplesFile)

	sink, err := metrics.CreateParquet(path, metrics.FileMeta{RunID: "run-1", LabVersion: "v1.0.0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	werr := sink.Write(&metrics.Sample{Arm: metrics.SpecArm, PromptTokens: 1200, CachedTokens: new(int64(1100))})
	if err := sink.Write(&metrics.Sample{Arm: metrics.SpecArm, RequestIndex: 1, PromptTokens: 1300}); werr == nil {
		werr = err
	}
	if err := sink.Close(); err != nil || werr != nil { // Close even when a Write failed
		fmt.Println(werr, err)
		return
	}

	samples, err := metrics.ReadParquet(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range samples {
		if s.CachedTokens == nil {
			fmt.Printf("request %d: %d prompt tokens, cached unknown\n", s.RequestIndex, s.PromptTokens)
			continue
		}
		fmt.Printf("request %d: %d prompt tokens, %d cached\n", s.RequestIndex, s.PromptTokens, *s.CachedTokens)
	}
	// Output:
	// request 0: 1200 prompt tokens, 1100 cached
	// request 1: 1300 prompt tokens, cached unknown
}
