// Package msg holds the protobuf messages that cross cluster members and
// the codec that carries Veil's Go messages inside them.
//
// Regenerate agent.pb.go after editing agent.proto:
//
//	apt-get install protobuf-compiler   # protoc 3.21
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go generate ./actors/msg
package msg

//go:generate protoc --go_out=. --go_opt=paths=source_relative agent.proto
