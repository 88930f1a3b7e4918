package capture

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"lab/cachesim"
	"lab/chat"
)

// agentSession is one real agent's requests, in the shape agents.md records it sends them
// (Codex: developer messages and reasoning items between user messages; Claude Code: a
// role "system" message inside messages; opencode and Qwen Code: Chat Completions with system
// messages, image parts and custom tool calls), each with the reply it got.
type agentSession struct {
	name, api string
	bodies    []string
	replies   []*chat.Reply
	// segments are, for the last request, the names its parts must have (cachesim.Parts), in
	// order.
	segments []string
}

var agentSessions = []agentSession{
	{
		name: "codex", api: APIOpenAIResponses,
		bodies: []string{
			`{"model":"m","instructions":"You are Codex.","prompt_cache_key":"s1","reasoning":{"effort":"medium","summary":"auto"},
			 "tools":[{"type":"function","name":"shell","description":"run","parameters":{"type":"object"}},{"type":"custom","name":"apply_patch","description":"patch","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},{"type":"web_search"}],
			 "input":[
			  {"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>read-only</permissions instructions>"}]},
			  {"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]},
			  {"type":"message","role":"user","content":[{"type":"input_text","text":"List the files."}]}]}`,
			`{"model":"m","instructions":"You are Codex.","prompt_cache_key":"s1","reasoning":{"effort":"medium","summary":"auto"},
			 "tools":[{"type":"function","name":"shell","description":"run","parameters":{"type":"object"}},{"type":"custom","name":"apply_patch","description":"patch","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},{"type":"web_search"}],
			 "input":[
			  {"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>read-only</permissions instructions>"}]},
			  {"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]},
			  {"type":"message","role":"user","content":[{"type":"input_text","text":"List the files."}]},
			  {"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Use ls."}],"encrypted_content":null},
			  {"type":"function_call","call_id":"c1","name":"shell","arguments":"{\"command\":[\"ls\"]}"},
			  {"type":"function_call_output","call_id":"c1","output":"a.go\nb.go"}]}`,
			`{"model":"m","instructions":"You are Codex.","prompt_cache_key":"s1","reasoning":{"effort":"medium","summary":"auto"},
			 "tools":[{"type":"function","name":"shell","description":"run","parameters":{"type":"object"}},{"type":"custom","name":"apply_patch","description":"patch","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},{"type":"web_search"}],
			 "input":[
			  {"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>read-only</permissions instructions>"}]},
			  {"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]},
			  {"type":"message","role":"user","content":[{"type":"input_text","text":"List the files."}]},
			  {"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Use ls."}],"encrypted_content":null},
			  {"type":"function_call","call_id":"c1","name":"shell","arguments":"{\"command\":[\"ls\"]}"},
			  {"type":"function_call_output","call_id":"c1","output":"a.go\nb.go"},
			  {"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"gAAAA"},
			  {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Two files."}]},
			  {"type":"reasoning","id":"rs_3","summary":[{"type":"summary_text","text":"Resumed."}]},
			  {"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>workspace-write</permissions instructions>"}]},
			  {"type":"message","role":"user","content":[{"type":"input_text","text":"Now patch a.go."},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]},
			  {"type":"custom_tool_call","call_id":"c2","name":"apply_patch","input":"*** Begin Patch"},
			  {"type":"custom_tool_call_output","call_id":"c2","output":"ok"},
			  {"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"go"}},
			  {"type":"lab_never_heard_of_it","id":"x1","payload":{"n":1}}]}`,
		},
		replies: []*chat.Reply{
			{ToolCalls: []chat.ToolCall{{ID: "c1", Name: "shell", Arguments: json.RawMessage(`{"command":["ls"]}`)}}},
			{Content: "Two files."},
		},
		segments: []string{"system", "tools", "developer 1", "message 2", "message 3", "reasoning 4", "message 4", "tool result 5",
			"message 6", "reasoning 7", "message 7", "developer 8", "message 9", "item 10", "message 11", "tool result 12",
			"item 13", "item 14"},
	},
	{
		name: "claude-code", api: APIAnthropic,
		bodies: []string{
			`{"model":"m","max_tokens":512,"stream":true,"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],
			 "tools":[{"name":"Bash","description":"run","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search","max_uses":2}],
			 "messages":[
			  {"role":"user","content":[{"type":"text","text":"<system-reminder>ctx</system-reminder>"},{"type":"text","text":"List the files.","cache_control":{"type":"ephemeral"}}]}]}`,
			`{"model":"m","max_tokens":512,"stream":true,"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],
			 "tools":[{"name":"Bash","description":"run","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search","max_uses":2}],
			 "messages":[
			  {"role":"user","content":[{"type":"text","text":"<system-reminder>ctx</system-reminder>"},{"type":"text","text":"List the files."}]},
			  {"role":"assistant","content":[{"type":"thinking","thinking":"Use ls.","signature":"sig"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},
			  {"role":"system","content":"Remember: read-only."},
			  {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a.go"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]}]}`,
			`{"model":"m","max_tokens":512,"stream":true,"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],
			 "tools":[{"name":"Bash","description":"run","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search","max_uses":2}],
			 "messages":[
			  {"role":"user","content":[{"type":"text","text":"<system-reminder>ctx</system-reminder>"},{"type":"text","text":"List the files."}]},
			  {"role":"assistant","content":[{"type":"thinking","thinking":"Use ls.","signature":"sig"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},
			  {"role":"system","content":"Remember: read-only."},
			  {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a.go"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]},
			  {"role":"assistant","content":[{"type":"redacted_thinking","data":"xx"},{"type":"text","text":"One file."},{"type":"server_tool_use","id":"s1","name":"web_search","input":{"query":"go"}},{"type":"web_search_tool_result","tool_use_id":"s1","content":[]}]},
			  {"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"notes"}},{"type":"text","text":"And now?"},{"type":"lab_never_heard_of_it","x":1}]}]}`,
		},
		replies: []*chat.Reply{
			{ToolCalls: []chat.ToolCall{{ID: "t1", Name: "Bash", Arguments: json.RawMessage(`{"command":"ls"}`)}}},
			{Content: "One file."},
		},
		segments: []string{"system", "tools", "message 1", "reasoning 2", "message 2", "system 3", "tool result 4", "item 5",
			"message 6", "item 7", "item 8", "item 9", "message 10", "item 11"},
	},
	{
		name: "opencode", api: APIOpenAIChat,
		bodies: []string{
			`{"model":"m","stream":true,"messages":[{"role":"system","content":"You are opencode."},{"role":"system","content":"Project rules."},{"role":"user","content":[{"type":"text","text":"List the files."}]}],
			  "tools":[{"type":"function","function":{"name":"bash","description":"run","parameters":{"type":"object"}}}]}`,
			`{"model":"m","stream":true,"messages":[{"role":"system","content":"You are opencode."},{"role":"system","content":"Project rules."},{"role":"user","content":[{"type":"text","text":"List the files."}]},
			  {"role":"assistant","content":"","reasoning_content":"Use ls.","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},
			  {"role":"tool","tool_call_id":"c1","content":"a.go"}],
			  "tools":[{"type":"function","function":{"name":"bash","description":"run","parameters":{"type":"object"}}}]}`,
			`{"model":"m","stream":true,"messages":[{"role":"system","content":"You are opencode."},{"role":"system","content":"Project rules."},{"role":"user","content":[{"type":"text","text":"List the files."}]},
			  {"role":"assistant","content":"","reasoning_content":"Use ls.","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},
			  {"role":"tool","tool_call_id":"c1","content":"a.go"},
			  {"role":"assistant","content":[{"type":"text","text":"One file."}]},
			  {"role":"developer","content":"Be brief."},
			  {"role":"user","content":[{"type":"text","text":"Look at this."},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"input_audio","input_audio":{"data":"AA","format":"wav"}},{"type":"file","file":{"file_id":"f1"}},{"type":"lab_never_heard_of_it"}]},
			  {"role":"assistant","content":null,"tool_calls":[{"id":"c2","type":"custom","custom":{"name":"apply_patch","input":"*** Begin Patch"}}]},
			  {"role":"tool","tool_call_id":"c2","content":"ok"}],
			  "tools":[{"type":"function","function":{"name":"bash","description":"run","parameters":{"type":"object"}}},{"type":"custom","custom":{"name":"apply_patch","description":"patch","format":{"type":"text"}}}]}`,
		},
		replies: []*chat.Reply{
			{Reasoning: "Use ls.", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)}}},
			{Content: "One file."},
		},
		segments: []string{"system", "tools", "system 1", "message 2", "reasoning 3", "message 3", "tool result 4", "message 5",
			"developer 6", "message 7", "item 8", "item 9", "item 10", "item 11", "message 12", "tool result 13"},
	},
}

// The bodies real agents send decode without error, keep one conversation across requests in
// the capture's grouping, and name their segments for what they are: a second system message
// "system N", a developer message "developer N", reasoning where it stands, every piece the
// lab does not read (images, server tools, unknown types) an "item N" of its own.
func TestAgentBodiesDecodeGroupAndName(t *testing.T) {
	for _, a := range agentSessions {
		t.Run(a.name, func(t *testing.T) {
			var g grouper
			var conv *conversation
			var last *chat.Request
			for i, body := range a.bodies {
				req, err := DecodeRequest(a.api, []byte(body))
				if err != nil {
					t.Fatalf("request %d: %v", i+1, err)
				}
				// Without a session key: the messages alone must keep the session together.
				c, created := g.assign("", "", req)
				if i == 0 {
					conv = c
				} else if created || c != conv {
					t.Fatalf("request %d started %s: the session was split", i+1, c.name)
				}
				var reply *chat.Reply
				if i < len(a.replies) {
					reply = a.replies[i]
				}
				g.update(c, req, reply, false)
				last = req
			}
			var got []string
			for _, p := range cachesim.Parts(last, "") {
				got = append(got, p.Name.String())
			}
			if !slices.Equal(got, a.segments) {
				t.Errorf("segments:\n got %q\nwant %q", got, a.segments)
			}
		})
	}
}

// A piece the lab does not know is an item segment holding its bytes' digest: a change in it
// changes the segment's text, so the part-by-part comparison sees it, and the row does not fail.
func TestUnknownItemIsAnOpaqueSegment(t *testing.T) {
	bodies := map[string][2]string{
		APIOpenAIResponses: {
			`{"input":[{"type":"message","role":"user","content":"hi"},{"type":"future_item","v":1}]}`,
			`{"input":[{"type":"message","role":"user","content":"hi"},{"type":"future_item","v":2}]}`,
		},
		APIOpenAIChat: {
			`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"future_part","v":1}]}]}`,
			`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"future_part","v":2}]}]}`,
		},
		APIAnthropic: {
			`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"future_block","v":1}]}]}`,
			`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"future_block","v":2}]}]}`,
		},
		APIOllamaChat: {
			`{"messages":[{"role":"user","content":"hi","images":["AAAA"]}]}`,
			`{"messages":[{"role":"user","content":"hi","images":["AAAB"]}]}`,
		},
	}
	for api, pair := range bodies {
		var parts [2][]cachesim.Part
		for i, body := range pair {
			req, err := DecodeRequest(api, []byte(body))
			if err != nil {
				t.Fatalf("%s body %d: %v", api, i+1, err)
			}
			if n := len(req.Messages); n != 2 || req.Messages[1].Item == "" {
				t.Fatalf("%s body %d: messages %+v; want the text and one item", api, i+1, req.Messages)
			}
			if !strings.Contains(req.Messages[1].Content, " sha256:") {
				t.Errorf("%s: item content %q holds no digest", api, req.Messages[1].Content)
			}
			parts[i] = cachesim.DifferenceParts(req, "")
		}
		d := cachesim.FirstDifference(parts[0], parts[1])
		if got := d.String(); got != "item 1" {
			t.Errorf("%s: first difference %q; want \"item 1\"", api, got)
		}
	}
}

// Two sessions that share only their instructions (the system prompt and a developer message,
// which the decoder keeps as developer) are two conversations: the developer message is the
// application's instructions, not a message of the session.
func TestDeveloperMessageIsNotASharedTurn(t *testing.T) {
	var g grouper
	var convs []*conversation
	for _, prompt := range []string{"List the files.", "Fix the bug."} {
		body := `{"instructions":"You are Codex.","input":[{"type":"message","role":"developer","content":"read-only"},{"type":"message","role":"user","content":"` + prompt + `"}]}`
		req, err := DecodeRequest(APIOpenAIResponses, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if req.Messages[1].Role != chat.RoleDeveloper {
			t.Fatalf("message 1 role %q; want developer", req.Messages[1].Role)
		}
		c, _ := g.assign("", "", req)
		g.update(c, req, &chat.Reply{Content: "ok"}, false)
		convs = append(convs, c)
	}
	if convs[0] == convs[1] {
		t.Errorf("two sessions sharing only their instructions were grouped as one (%s)", convs[0].name)
	}
}

// An item (an image part after a user's text, a server tool's block after an assistant's) is
// part of the message it came with: it starts no turn and no step.
func TestItemsStartNoTurn(t *testing.T) {
	body := `{"messages":[{"role":"user","content":[{"type":"text","text":"Look."},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]},
	  {"role":"assistant","content":[{"type":"text","text":"Searching."},{"type":"server_tool_use","id":"s1","name":"web_search","input":{}}]},
	  {"role":"user","content":"And?"}]}`
	req, err := DecodeRequest(APIAnthropic, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if turn, step := turnStep(req); turn != 2 || step != 1 {
		t.Errorf("turn %d, step %d; want turn 2, step 1", turn, step)
	}
}
