package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"lab/chat"
	"lab/internal/replytest"
)

// bigCall is a scripted reply whose one tool call's argument is a string of n bytes.
func bigCall(n int) *chat.Reply {
	arg, _ := json.Marshal(map[string]string{"path": "big.txt", "content": strings.Repeat("x", n)})
	return &chat.Reply{Reasoning: "write it", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "write", Arguments: arg}}}
}

// sendBig sends, on the sim, the request answered by a tool call of n bytes of argument, then the
// request after it, whose history carries the call.
func sendBig(tb testing.TB, n int) error {
	be := newSimTB(tb)
	ctx := context.Background()
	reply := bigCall(n)
	msgs := []chat.Message{{Role: chat.RoleSystem, Content: "You are a coding agent."}, {Role: chat.RoleUser, Content: "Write big.txt."}}
	if _, err := be.Send(ctx, &chat.Request{Messages: msgs, Think: true}, reply); err != nil {
		return err
	}
	msgs = append(msgs, chat.Message{Role: chat.RoleAssistant, Reasoning: reply.Reasoning, ToolCalls: reply.ToolCalls},
		chat.Message{Role: chat.RoleTool, ToolName: "write", ToolCallID: "c1", Content: "ok"})
	_, err := be.Send(ctx, &chat.Request{Messages: msgs, Think: true}, &chat.Reply{Content: "done"})
	return err
}

// BenchmarkSimReplyBytes sends a tool call of 1, 10 and 100 MB of argument through the sim (its
// request and the next, which carries it in the history), reporting bytes allocated per reply
// byte and the peak heap.
func BenchmarkSimReplyBytes(b *testing.B) {
	for _, size := range []int{1_000_000, 10_000_000, 100_000_000} {
		b.Run(fmt.Sprintf("%dMB", size/1_000_000), func(b *testing.B) {
			for b.Loop() {
				alloc, peak := replytest.Measure(func() any {
					if err := sendBig(b, size); err != nil {
						b.Fatal(err)
					}
					return nil
				})
				replytest.Report(b, int64(size), alloc, peak)
			}
		})
	}
}

// The scripted model's reply past the request's limit is the reply-too-long error naming the
// limit, as a server's reply is; within it, it is the answer.
func TestScriptedReplyPastTheLimit(t *testing.T) {
	be := newSim(t, "llamacpp", 0)
	be.SetScript([]chat.ScriptGroup{{Replies: []chat.Reply{*bigCall(2048)}}, {Replies: []chat.Reply{*bigCall(100)}}})
	msgs := []chat.Message{{Role: chat.RoleSystem, Content: "sys"}, {Role: chat.RoleUser, Content: "go"}}
	_, err := be.Send(context.Background(), &chat.Request{Messages: msgs, Generate: 100, MaxReplyBytes: 1024}, nil)
	var ae *chat.APIError
	if !errors.As(err, &ae) || !strings.HasPrefix(ae.Body, chat.ReplyTooLong) || !strings.Contains(ae.Body, "1024 bytes") {
		t.Fatalf("a scripted reply of 2 KiB with a 1 KiB limit: %v; want the reply-too-long error naming 1024 bytes", err)
	}
	res, err := be.Send(context.Background(), &chat.Request{Messages: msgs, Generate: 100, MaxReplyBytes: 1024}, nil)
	if err != nil || res.Reply == nil || len(res.Reply.ToolCalls) != 1 {
		t.Fatalf("a scripted reply within the limit: %v, %+v; want it answered", err, res)
	}
}
