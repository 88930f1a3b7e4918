package scorecard

import (
	"fmt"
	"sort"

	"lab/chat"
	"lab/metrics"
	"lab/row"
)

// Decoder decodes a saved request body of an API (the API names of lab/capture:
// "openai-chat", "openai-responses", "anthropic", "ollama-chat", …), as capture.DecodeRequest does.
type Decoder func(api string, body []byte) (*chat.Request, error)

// Session returns the main conversation of a lab proxy capture as [Request]s in the order sent:
// of the rows that are not side requests, those of the conversation (scenario) with the most
// rows, each with its saved body decoded. A row without a saved body is left out (the body was
// over the proxy's limit, or not saved), and so is a body that does not decode, with its reason
// in skipped. The error is for a capture with no main conversation.
func Session(rows []metrics.Sample, bodies []row.RequestLine, decode Decoder) (reqs []Request, skipped []string, err error) {
	n := map[string]int{}
	var order []string
	for _, s := range rows {
		if s.SideRequest {
			continue
		}
		if n[s.Scenario] == 0 {
			order = append(order, s.Scenario)
		}
		n[s.Scenario]++
	}
	main := ""
	for _, c := range order {
		if n[c] > n[main] {
			main = c
		}
	}
	if main == "" {
		return nil, nil, fmt.Errorf("scorecard: the capture has no conversation but side requests (%d rows)", len(rows))
	}
	type key struct {
		conv string
		idx  int32
	}
	saved := map[key]row.RequestLine{}
	for _, l := range bodies {
		saved[key{l.Scenario, l.RequestIndex}] = l
	}
	var mine []metrics.Sample
	for _, s := range rows {
		if s.Scenario == main && !s.SideRequest {
			mine = append(mine, s)
		}
	}
	sort.SliceStable(mine, func(i, j int) bool { return mine[i].RequestIndex < mine[j].RequestIndex })
	for _, s := range mine {
		l, ok := saved[key{s.Scenario, s.RequestIndex}]
		if !ok {
			skipped = append(skipped, fmt.Sprintf("request %d: no saved body", s.RequestIndex))
			continue
		}
		req, err := decode(l.API, l.Body)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("request %d: %v", s.RequestIndex, err))
			continue
		}
		reqs = append(reqs, Request{Index: s.RequestIndex, Req: req, Segment: s.DivergenceSegment, Reread: s.RereadTokens})
	}
	return reqs, skipped, nil
}
