package scriptmodel

import (
	"fmt"
	"path"
	"strings"

	"lab/scorecard"
)

// CallID is the id the scripted model gives the tool call of step (1-based) of turn (1-based):
// "call_T_S". Agents send it back with the call's result (tool_call_id, call_id, tool_use_id),
// which is how a result in a captured request is tied to the script's step.
func CallID(turn, step int) string { return fmt.Sprintf("call_%d_%d", turn, step) }

// Facts works out what s's steps are known to be ([scorecard.Facts], for judging an agent's
// requests from outside) over the workspace files (path → content; nil is an empty
// workspace), following the script's edits and writes: a read is an unchanged re-read when an
// earlier read of the same file showed the same content. A run command's effect on files is not
// known and not followed (the default script's commands change no file). An edit whose old text
// is not in the file leaves it unchanged.
func (s *Script) Facts(workspace map[string]string) scorecard.Facts {
	files := map[string]string{}
	for k, v := range workspace {
		files[path.Clean(k)] = v
	}
	type seen struct{ content, call string }
	read := map[string]seen{}
	var f scorecard.Facts
	for t, tr := range s.Turns {
		f.Prompts = append(f.Prompts, tr.User)
		for i, st := range tr.Steps {
			in := st.Intent
			id := CallID(t+1, i+1)
			if in.Kind != KindAnswer {
				f.Calls = append(f.Calls, id)
				if st.Reasoning != "" {
					f.Reasoned = append(f.Reasoned, id)
				}
			}
			p := path.Clean(in.Path)
			switch in.Kind {
			case KindRead:
				content := files[p]
				if prev, ok := read[p]; ok && prev.content == content {
					f.Rereads = append(f.Rereads, scorecard.Reread{Path: in.Path, Call: id, Of: prev.call})
					continue
				}
				read[p] = seen{content, id}
			case KindEdit:
				files[p] = strings.Replace(files[p], in.Old, in.New, 1)
			case KindWrite:
				files[p] = in.Text
			}
		}
	}
	return f
}
