package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// config is the config file: $XDG_CONFIG_HOME/veil/config.json, or
// ~/.config/veil/config.json (docs/cli.md). Flags and environment
// variables override it.
type config struct {
	URL      string `json:"url,omitempty"`
	APIKey   string `json:"apiKey,omitempty"`
	Provider string `json:"provider,omitempty"`
	AIKey    string `json:"aiKey,omitempty"`
	// Agent is the agent used when a command's AGENT is omitted.
	Agent string `json:"agent,omitempty"`
	// Explorers are transaction link templates by chain ("{hash}" is the
	// transaction), over the server's links.
	Explorers map[string]string `json:"explorers,omitempty"`

	path string
}

// configKeys are the settable keys, in display order.
var configKeys = []string{"url", "apiKey", "provider", "aiKey", "agent"}

func (c *config) field(key string) (*string, bool) {
	switch strings.ToLower(key) {
	case "url":
		return &c.URL, true
	case "apikey", "api-key", "api_key":
		return &c.APIKey, true
	case "provider":
		return &c.Provider, true
	case "aikey", "ai-key", "ai_key":
		return &c.AIKey, true
	case "agent":
		return &c.Agent, true
	}
	return nil, false
}

func defaultConfigPath(getenv func(string) string) string {
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "veil", "config.json")
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".config", "veil", "config.json")
}

func readConfig(path string) (config, error) {
	var c config
	raw, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return c, fmt.Errorf("config file %s: %w", path, err)
		}
		return c, fmt.Errorf("config file: %w", err)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("config file %s is not valid JSON: %v", path, err)
	}
	return c, nil
}

// writeConfig writes c to its path, readable by the owner only (it holds
// an API key).
func writeConfig(c config) error {
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.path)
}

func init() {
	register(&command{
		path:    "config path",
		summary: "print the config file's path",
		run: func(a *app, args []string) error {
			if err := noArgs("config path", args); err != nil {
				return err
			}
			return a.print(map[string]string{"path": a.cfg.path}, func() error {
				fmt.Fprintln(a.stdout, a.cfg.path)
				return nil
			})
		},
	})
	register(&command{
		path:    "config show",
		summary: "print the settings in effect (flags, environment, config file)",
		detail:  "Secrets (apiKey, aiKey) are shown shortened.",
		run: func(a *app, args []string) error {
			if err := noArgs("config show", args); err != nil {
				return err
			}
			eff := map[string]string{
				"url": a.g.url, "apiKey": mask(a.g.apiKey), "provider": a.g.provider,
				"aiKey": mask(a.g.aiKey), "agent": firstNonEmpty(a.getenv("VEIL_AGENT"), a.cfg.Agent),
			}
			if a.g.json {
				eff["configPath"] = a.cfg.path
				return a.printJSON(eff)
			}
			fmt.Fprintf(a.stdout, "config file  %s\n", a.cfg.path)
			for _, k := range configKeys {
				v := eff[k]
				if v == "" {
					v = "-"
				}
				fmt.Fprintf(a.stdout, "%-12s %s\n", k, v)
			}
			return nil
		},
	})
	register(&command{
		path:     "config set",
		args:     "KEY VALUE",
		summary:  "set a key of the config file (url, apiKey, provider, aiKey, agent)",
		detail:   "An empty VALUE removes the key. The file is written with mode 0600.",
		examples: []string{"veil config set url http://127.0.0.1:8080", "veil config set apiKey veil_live_…", "veil config set agent alice"},
		run: func(a *app, args []string) error {
			if len(args) != 2 {
				return usagef("config set needs KEY VALUE")
			}
			// Start from the file alone: flags and env must not leak in.
			c, err := readConfig(a.cfg.path)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			c.path = a.cfg.path
			f, ok := c.field(args[0])
			if !ok {
				return usagef("unknown config key %q: use one of %s", args[0], strings.Join(configKeys, ", "))
			}
			*f = args[1]
			if err := writeConfig(c); err != nil {
				return err
			}
			return a.print(map[string]string{"path": c.path}, func() error {
				fmt.Fprintf(a.stderr, "wrote %s\n", c.path)
				return nil
			})
		},
	})
}

func mask(s string) string {
	if len(s) <= 14 {
		if s == "" {
			return ""
		}
		return "****"
	}
	return s[:10] + "…" + s[len(s)-4:]
}
