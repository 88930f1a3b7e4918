package anthropic

import (
	"slices"
	"testing"

	"lab/chat"
)

// An assistant message's cache marker stays on the message when server tool blocks follow it
// as items of their own; a block the lab does not know is an item, not an error.
func TestDecodeRequestItemsAndMarkers(t *testing.T) {
	body := `{"messages":[
	  {"role":"user","content":"Search."},
	  {"role":"assistant","content":[{"type":"text","text":"Searching.","cache_control":{"type":"ephemeral"}},{"type":"server_tool_use","id":"s1","name":"web_search","input":{}},{"type":"web_search_tool_result","tool_use_id":"s1","content":[]}]},
	  {"role":"system","content":"Be brief."},
	  {"role":"user","content":[{"type":"future_block","v":1}]}]}`
	req, err := DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range req.Messages {
		got = append(got, string(m.Role)+":"+m.Item)
	}
	want := []string{"user:", "assistant:", "assistant:server_tool_use", "assistant:web_search_tool_result", "system:", "user:future_block"}
	if !slices.Equal(got, want) {
		t.Errorf("messages %q; want %q", got, want)
	}
	if req.Messages[4].Role != chat.RoleSystem || req.Messages[4].Content != "Be brief." {
		t.Errorf("system message inside messages: %+v", req.Messages[4])
	}
	if !slices.Equal(req.CacheBreakpoints, []string{AtMessage(1)}) {
		t.Errorf("breakpoints %q; want [%q]", req.CacheBreakpoints, AtMessage(1))
	}
}
