// Package llm gives the chat loop its model: one langchaingo llms.Model per
// chat request, chosen by the X-AI-Provider header (ParseProvider) and built
// by Config.Model with the X-AI-Key header:
//
//	veil       the hosted default: the builtin planner (llm/builtin,
//	           offline, deterministic) unless Config.HostedURL names an
//	           OpenAI-compatible endpoint (VEIL_MODEL_URL, VEIL_MODEL_NAME,
//	           VEIL_MODEL_KEY); X-AI-Key is ignored
//	openai     langchaingo llms/openai with the caller's key (required)
//	anthropic  langchaingo llms/anthropic with the caller's key (required);
//	           "claude" is an alias
//
// Errors: a bad header is a *RequestError (HTTP 400, the text says which
// providers exist or that X-AI-Key is missing); a failing provider (key
// rejected, timeout, unreachable, 5xx, unusable response) is a
// *ProviderError (HTTP 502). Neither text ever contains the key, which is
// used for that request only: it lives in the returned model and nowhere
// else, and nothing here logs (langchaingo's debug HTTP clients are not
// used; the only logging in langchaingo v0.1.14's openai/anthropic code is
// on streaming paths, which Veil does not use).
//
// # The loop contract
//
// The chat loop (actors/agent) is written once against llms.Model. These
// are the rules every model returned by Config.Model follows, checked
// against langchaingo v0.1.14's conversion code and proven against the
// fake OpenAI and Anthropic servers of llm/llmtest:
//
//  1. Request: messages are the system prompt (llms.ChatMessageTypeSystem;
//     put saved memories and any other data there too, or in further system
//     messages), the conversation history as Human/AI text messages, then
//     the user's message as the last Human message. Offer the tools with
//     llms.WithTools; each tool's Parameters must be a JSON-schema object,
//     also for tools without arguments ({"type":"object","properties":{}}:
//     Anthropic rejects a tool without input_schema).
//
//  2. Response: text, calls := llm.Reply(resp). Every tool call is in
//     Choices[0].ToolCalls (one response may hold several), with an ID,
//     Type "function", FunctionCall.Name and FunctionCall.Arguments, a JSON
//     string that is normally an object but may be malformed (OpenAI
//     models do that): the loop reports such a call as an error result
//     and carries on. No calls means text is the final answer.
//     llm.Usage(resp) gives prompt and completion tokens.
//
//  3. After tool calls: append llm.AssistantMessage(text, calls) (the AI
//     turn with every call, unchanged), run the calls, then append one
//     llm.ToolMessage(call, content) per call in the order of the calls,
//     content being llm.ResultContent(name, status, detail): the JSON
//     {name, status, detail} the spec stores as a tool message's text.
//     These tool messages are the single turn of results; then call the
//     model again with the same tools. A tool message holding several
//     ToolCallResponse parts is accepted too.
//
//  4. Stop when a response has no tool calls, or after 10 model calls.
//
// Why the rules hold for every provider although langchaingo's providers
// differ: llms/openai sends an AI message's ToolCall parts as tool_calls
// and requires exactly one ToolCallResponse per tool message;
// llms/anthropic returns one Choice per content block (text and each
// tool_use separately, ToolCall.Type empty) and, when sending, reads only
// Parts[0] of AI and tool messages (langchaingo issues #1468, #1010), so
// several calls in one turn would be dropped and the API would reject the
// orphaned tool_result. The provider models returned here wrap langchaingo
// and fix both directions: AI and tool messages are split into one part
// each for anthropic and the resulting consecutive same-role messages are
// merged back into single alternating turns in the HTTP body (tool_result
// blocks first), system messages are joined into one, and responses are
// merged into a single choice with Type "function" and object arguments.
package llm
