package main

import "fmt"

// webReach is --agent-web-reach: which hosts the agents' own web requests
// (pay_invoice's foreign payment links, fetch_paid's URLs) may reach.
//
//   - public: public addresses only, never loopback, private or link-local
//     ones (a chat cannot make the server probe its own network);
//   - any: every address, for development with several servers on one
//     machine;
//   - auto (the default): any when every chain is a devnet (nothing of
//     value is at stake and the other servers a developer runs are on
//     loopback), public as soon as one chain is on a real network.
type webReach string

const (
	webReachAuto   webReach = "auto"
	webReachPublic webReach = "public"
	webReachAny    webReach = "any"
)

func (w *webReach) String() string {
	if *w == "" {
		return string(webReachAuto)
	}
	return string(*w)
}

func (w *webReach) Set(v string) error {
	switch r := webReach(v); r {
	case webReachAuto, webReachPublic, webReachAny:
		*w = r
		return nil
	}
	return fmt.Errorf("%q: want auto, public or any", v)
}

// allowPrivate resolves the mode against the chains this server runs.
func (w webReach) allowPrivate(realChains int) bool {
	switch w {
	case webReachAny:
		return true
	case webReachPublic:
		return false
	}
	return realChains == 0
}
