// Package api holds the wire types of librarian-svc, generated from contracts/schema/*.json.
//
// types.gen.go is quicktype's output (one Go type per schema definition; each response union's
// variants are separate types, e.g. LibrarianSearchAction, LibrarianCompleteAction, ErrorResponse);
// unions.gen.go has one sealed interface per response union and its decoder (DecodeLibrarianResponse
// and friends), which reads `action` first and then the variant it names. Neither file is edited
// by hand: `make go-client` regenerates both and `make go-check` fails when they drift.
package api
