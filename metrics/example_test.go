package metrics_test

import (
	"fmt"
	"os"
	"path/filepath"

	"lab/metrics"
)

// Write samples to a run folder's part as they are measured, close the sink on every path, and
// read them back.
func ExampleCreatePart() {
	dir, err := os.MkdirTemp("", "run")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	part := metrics.Shard{Index: 1, Count: 1}
	path := filepath.Join(dir, metrics.PartFile(part))

	sink, err := metrics.CreatePart(dir, part, metrics.FileMeta{RunID: "run-1", LabVersion: "v1.0.0"})
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
