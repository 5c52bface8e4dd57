// Package buildinfo says which build a binary is: its version, the VCS
// revision and time it was built from, whether the tree had uncommitted
// changes, and the Go version. It reads what the Go toolchain stamps into
// every binary (runtime/debug.ReadBuildInfo), so a plain `go build` in a
// checkout is identified as well as `make build`, whose -ldflags
// "-X main.version=…" (git describe) takes precedence for the version.
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
	"time"
)

// Info identifies a build.
type Info struct {
	// Version: the -ldflags version when set, else the module version the
	// toolchain recorded (a tag, or a pseudo-version such as
	// v0.0.0-20261123120000-abcdef123456+dirty), else "devel".
	Version   string    `json:"version"`
	Revision  string    `json:"revision,omitempty"`
	Time      time.Time `json:"time,omitzero"`
	Dirty     bool      `json:"dirty"`
	GoVersion string    `json:"goVersion"`
}

// Read returns this binary's Info. ldflagsVersion is the main package's
// version variable ("dev" or "" when the build did not set it).
func Read(ldflagsVersion string) Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: orDevel(ldflagsVersion)}
	}
	return fromBuildInfo(bi, ldflagsVersion)
}

func fromBuildInfo(bi *debug.BuildInfo, ldflagsVersion string) Info {
	i := Info{GoVersion: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.time":
			i.Time, _ = time.Parse(time.RFC3339, s.Value)
		case "vcs.modified":
			i.Dirty = s.Value == "true"
		}
	}
	switch {
	case ldflagsVersion != "" && ldflagsVersion != "dev":
		i.Version = ldflagsVersion
	case bi.Main.Version != "" && bi.Main.Version != "(devel)":
		i.Version = bi.Main.Version
	default:
		i.Version = "devel"
	}
	return i
}

func orDevel(v string) string {
	if v == "" || v == "dev" {
		return "devel"
	}
	return v
}

// ShortRevision is the first 12 characters of the revision.
func (i Info) ShortRevision() string {
	if len(i.Revision) > 12 {
		return i.Revision[:12]
	}
	return i.Revision
}

// String is one line for `version` commands and logs:
// "v0.3.1 (revision 1a2b3c4d5e6f, 2026-11-23T12:00:00Z, dirty; go1.26.8)".
func (i Info) String() string {
	var parts []string
	if i.Revision != "" {
		parts = append(parts, "revision "+i.ShortRevision())
	}
	if !i.Time.IsZero() {
		parts = append(parts, i.Time.UTC().Format(time.RFC3339))
	}
	if i.Dirty {
		parts = append(parts, "dirty")
	}
	s := i.Version
	tail := strings.Join(parts, ", ")
	if i.GoVersion != "" {
		if tail != "" {
			tail += "; "
		}
		tail += i.GoVersion
	}
	if tail != "" {
		s += fmt.Sprintf(" (%s)", tail)
	}
	return s
}
