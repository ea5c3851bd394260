module github.com/termgate/termgate

go 1.26.8

require (
	github.com/docker/docker v28.5.2+incompatible // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/crypto v0.59.0 // indirect
)
