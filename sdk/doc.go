// Package sdk is what a plugin author imports: the Family and Adapter
// contracts in plain Go, the Serve helpers that make a plugin's main one
// call, the types a family's Check answers with, and the JSON, typography
// and rounding helpers every report uses.
//
// A family plugin implements Family (plain Go, no gRPC) and calls
// ServeFamily; an adapter implements Adapter and calls ServeAdapter. The
// wire between a host and its plugins is sdk/wire, and what a host checks
// of a plugin's descriptions and answers is sdk/hostcheck: an author needs
// neither to write a plugin (sdk/plugintest runs both against a built one).
package sdk
