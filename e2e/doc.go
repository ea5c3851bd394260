// Package e2e holds termgate's end-to-end acceptance tests: the real binary
// (built once by TestMain) against real containers of the local Docker
// engine, driven by in-process SSH and WebSocket clients and, for one
// scenario, the OpenSSH client. The tests assert what a user sees, as the
// external contract describes it (that contract is kept outside this
// repository and given to the acceptance suite; README.md describes the
// behaviour).
//
// Run them with
//
//	go test -race -count=1 ./e2e
//
// They need a reachable Docker engine and the image termgate-test:busybox,
// which TestMain builds with scripts/test-image.sh (no pull). Without an
// engine the package is skipped, unless TERMGATE_REQUIRE_DOCKER=1, which
// turns that into a failure (CI sets it); likewise TERMGATE_REQUIRE_OPENSSH=1
// for the OpenSSH scenario. TERMGATE_E2E_BINARY=PATH tests that binary
// instead of building one; TERMGATE_E2E_LOGS=1 prints every gateway's log,
// not only those of failed tests.
//
// Every test starts its own gateway process on 127.0.0.1 (free ports, a
// temporary --state-dir with generated keys and tokens) and its own
// containers, named tge2e-<random>-<what> and carrying the label
// tge2e.gw=<random>, which the gateway gets as --instance-label: gateways
// of parallel tests (or of a concurrent run) never see, sweep or kill each
// other's containers. A run killed halfway can leave containers behind;
// remove them with
//
//	docker rm -f $(docker ps -aq --filter label=tge2e)
package e2e
