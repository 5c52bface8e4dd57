package llm

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/veilhq/veil/llm/builtin"
)

// Provider names a model provider as the X-AI-Provider header does.
type Provider string

// The providers.
const (
	// Veil is the hosted default: the builtin planner, or the
	// OpenAI-compatible endpoint the operator configured.
	Veil Provider = "veil"
	// OpenAI is api.openai.com (or Config.OpenAIBaseURL) with the caller's key.
	OpenAI Provider = "openai"
	// Anthropic is api.anthropic.com (or Config.AnthropicBaseURL) with the
	// caller's key. "claude" is an alias.
	Anthropic Provider = "anthropic"
)

// Providers lists the providers in the order documentation names them.
func Providers() []Provider { return []Provider{Veil, OpenAI, Anthropic} }

// ParseProvider reads an X-AI-Provider header value: case and surrounding
// spaces do not matter, empty means Veil, "claude" means Anthropic. Anything
// else is a *RequestError (HTTP 400) that names the providers that exist.
func ParseProvider(header string) (Provider, error) {
	switch v := strings.ToLower(strings.TrimSpace(header)); v {
	case "", "veil":
		return Veil, nil
	case "openai":
		return OpenAI, nil
	case "anthropic", "claude":
		return Anthropic, nil
	default:
		shown := header
		if r := []rune(shown); len(r) > 40 {
			shown = string(r[:40]) + "…"
		}
		return "", &RequestError{
			msg: fmt.Sprintf("unknown X-AI-Provider %q: use veil (the default), openai or anthropic (alias claude)", shown),
			err: ErrUnknownProvider,
		}
	}
}

// Defaults used when the Config leaves a field empty.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com/v1"
	// DefaultOpenAIModel: langchaingo v0.1.14's own default is gpt-3.5-turbo,
	// which is retired; gpt-4o-mini is cheap and calls tools well.
	DefaultOpenAIModel = "gpt-4o-mini"
	// DefaultAnthropicModel: langchaingo v0.1.14's own default is
	// claude-3-5-sonnet-20240620, which is retired.
	DefaultAnthropicModel = "claude-sonnet-4-5"
	// DefaultTimeout bounds one model call (not the whole chat loop).
	DefaultTimeout = 60 * time.Second
)

// Config says how to reach the models. The zero Config is valid: the hosted
// default is the builtin planner and openai/anthropic use their public APIs.
type Config struct {
	// HostedURL, when set, makes the hosted default (provider veil) an
	// OpenAI-compatible endpoint (Ollama, vLLM, a gateway…) instead of the
	// builtin planner. HostedModel is then required; HostedKey is sent as a
	// bearer token when set. (VEIL_MODEL_URL, VEIL_MODEL_NAME, VEIL_MODEL_KEY)
	HostedURL, HostedModel, HostedKey string

	// Base URLs of the two caller-keyed providers; overridable for tests and
	// proxies. Empty means the public API.
	OpenAIBaseURL, AnthropicBaseURL string
	// Models used with the caller's key. Empty means DefaultOpenAIModel and
	// DefaultAnthropicModel.
	OpenAIModel, AnthropicModel string

	// Timeout bounds each model call; 0 means DefaultTimeout.
	Timeout time.Duration

	// Now is the builtin planner's clock (schedule end dates); nil means
	// time.Now.
	Now func() time.Time

	// Transport carries provider HTTP traffic; nil means a shared clone of
	// http.DefaultTransport.
	Transport http.RoundTripper
}

// FromEnv reads a Config from the environment (getenv is os.Getenv in
// production): VEIL_MODEL_URL, VEIL_MODEL_NAME, VEIL_MODEL_KEY,
// VEIL_MODEL_TIMEOUT (a Go duration), VEIL_OPENAI_BASE_URL,
// VEIL_OPENAI_MODEL, VEIL_ANTHROPIC_BASE_URL, VEIL_ANTHROPIC_MODEL. It does
// not read OPENAI_API_KEY or ANTHROPIC_API_KEY: caller-keyed providers only
// ever use the caller's key.
func FromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		HostedURL:        strings.TrimSpace(getenv("VEIL_MODEL_URL")),
		HostedModel:      strings.TrimSpace(getenv("VEIL_MODEL_NAME")),
		HostedKey:        strings.TrimSpace(getenv("VEIL_MODEL_KEY")),
		OpenAIBaseURL:    strings.TrimSpace(getenv("VEIL_OPENAI_BASE_URL")),
		OpenAIModel:      strings.TrimSpace(getenv("VEIL_OPENAI_MODEL")),
		AnthropicBaseURL: strings.TrimSpace(getenv("VEIL_ANTHROPIC_BASE_URL")),
		AnthropicModel:   strings.TrimSpace(getenv("VEIL_ANTHROPIC_MODEL")),
	}
	if s := strings.TrimSpace(getenv("VEIL_MODEL_TIMEOUT")); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return Config{}, fmt.Errorf("llm: VEIL_MODEL_TIMEOUT %q is not a positive duration (e.g. 60s)", s)
		}
		c.Timeout = d
	}
	return c, c.Validate()
}

// Validate checks the operator's configuration (not the caller's headers).
func (c Config) Validate() error {
	if c.HostedURL != "" && c.HostedModel == "" {
		return fmt.Errorf("llm: VEIL_MODEL_URL is set but VEIL_MODEL_NAME is empty: name the model the endpoint serves")
	}
	if c.HostedURL == "" && (c.HostedModel != "" || c.HostedKey != "") {
		return fmt.Errorf("llm: VEIL_MODEL_NAME/VEIL_MODEL_KEY are set without VEIL_MODEL_URL")
	}
	for _, u := range []string{c.HostedURL, c.OpenAIBaseURL, c.AnthropicBaseURL} {
		if u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return fmt.Errorf("llm: model URL %q must start with http:// or https://", u)
		}
	}
	if c.Timeout < 0 {
		return fmt.Errorf("llm: negative model timeout")
	}
	return nil
}

// HostedName describes the hosted default for logs and /tee/info-style
// reports: "builtin" or "<model> at <url>".
func (c Config) HostedName() string {
	if c.HostedURL == "" {
		return "builtin"
	}
	return c.HostedModel + " at " + c.HostedURL
}

var sharedTransport = http.DefaultTransport.(*http.Transport).Clone()

func (c Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c Config) httpClient(p Provider) *recordingClient {
	rt := c.Transport
	if rt == nil {
		rt = sharedTransport
	}
	// The per-call context deadline bounds each call; the client timeout is
	// a backstop a little later so the context error wins.
	return &recordingClient{
		client:         &http.Client{Transport: rt, Timeout: c.timeout() + 5*time.Second},
		mergeAnthropic: p == Anthropic,
	}
}

// Model returns the model for one chat request. apiKey is the X-AI-Key
// header: required for openai and anthropic (a *RequestError when empty),
// ignored for veil. The key lives only inside the returned model, which the
// caller drops at the end of the request; it is never stored or logged.
//
// Every model returned follows the loop contract of the package doc: tool
// calls are all in Choices[0].ToolCalls, provider failures are
// *ProviderError.
func (c Config) Model(p Provider, apiKey string) (llms.Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	apiKey = strings.TrimSpace(apiKey)
	switch p {
	case Veil, "":
		if c.HostedURL == "" {
			var opts []builtin.Option
			if c.Now != nil {
				opts = append(opts, builtin.WithNow(c.Now))
			}
			return builtin.New(opts...), nil
		}
		token := c.HostedKey
		if token == "" {
			// langchaingo requires a token and would otherwise read
			// OPENAI_API_KEY from the environment and send it to this URL.
			token = "none"
		}
		hc := c.httpClient(Veil)
		m, err := openai.New(
			openai.WithBaseURL(c.HostedURL), openai.WithModel(c.HostedModel),
			openai.WithToken(token), openai.WithOrganization(""), openai.WithHTTPClient(hc),
		)
		if err != nil {
			return nil, fmt.Errorf("llm: hosted model: %w", err)
		}
		return &adapter{inner: m, provider: Veil, secret: c.HostedKey, timeout: c.timeout()}, nil
	case OpenAI:
		return c.withKey(p, apiKey, func(hc *recordingClient) (llms.Model, error) {
			return openai.New(
				openai.WithBaseURL(cmp.Or(c.OpenAIBaseURL, DefaultOpenAIBaseURL)), openai.WithModel(cmp.Or(c.OpenAIModel, DefaultOpenAIModel)),
				openai.WithToken(apiKey), openai.WithOrganization(""), openai.WithHTTPClient(hc),
			)
		})
	case Anthropic:
		return c.withKey(p, apiKey, func(hc *recordingClient) (llms.Model, error) {
			return anthropic.New(
				anthropic.WithBaseURL(cmp.Or(c.AnthropicBaseURL, DefaultAnthropicBaseURL)), anthropic.WithModel(cmp.Or(c.AnthropicModel, DefaultAnthropicModel)),
				anthropic.WithToken(apiKey), anthropic.WithHTTPClient(hc),
			)
		})
	default:
		q, err := ParseProvider(string(p))
		if err != nil {
			return nil, err
		}
		return c.Model(q, apiKey)
	}
}

// withKey builds the model of provider p (build, with the client that
// reaches it), which runs on the caller's own key: required, and redacted
// from what a failure says.
func (c Config) withKey(p Provider, apiKey string, build func(hc *recordingClient) (llms.Model, error)) (llms.Model, error) {
	if apiKey == "" {
		return nil, missingKey(p)
	}
	m, err := build(c.httpClient(p))
	if err != nil {
		return nil, fmt.Errorf("llm: %s: %s", p, Redact(err.Error(), apiKey))
	}
	return &adapter{inner: m, provider: p, secret: apiKey, timeout: c.timeout()}, nil
}

func missingKey(p Provider) error {
	return &RequestError{
		msg: fmt.Sprintf("X-AI-Key is required with X-AI-Provider %s: pass your own %s API key (it is used for this request only)", p, p.display()),
		err: ErrMissingKey,
	}
}
