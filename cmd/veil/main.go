// Command veil is the command-line client of the Veil agent platform: it
// creates and inspects agents, chats with them, and reads their
// conversations, notifications, invoices and schedules over the HTTP API
// (through package client). docs/cli.md is its manual.
package main

import "os"

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(newApp(os.Stdin, os.Stdout, os.Stderr, os.Getenv).run(os.Args[1:]))
}
