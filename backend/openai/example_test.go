package openai_test

import (
	"fmt"

	"lab/backend/openai"
	"lab/chat"
)

func ExampleEncodeMessagesWith() {
	msgs := []chat.Message{
		{Role: chat.RoleUser, Content: "list files"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "ls"}}},
	}
	// DeepSeek's thinking mode: reasoning_content present on a tool-call turn, even empty.
	b, _ := openai.EncodeMessagesWith(msgs, openai.EncodeOptions{ReasoningField: openai.FieldReasoningContent, ReasoningOnToolCalls: true})
	fmt.Println(string(b))
	// Output:
	// [{"role":"user","content":"list files"},{"role":"assistant","content":"","reasoning_content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}]
}

func ExampleNonce() {
	fmt.Println(openai.Nonce("20261129-231502"))
	// Output: lab-run: 903c83d6169fc5bc
}
