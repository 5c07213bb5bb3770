// Package hostcheck is what a host checks of a plugin before it trusts
// what the plugin says: a family's description before the host loads it
// (Description), and each adapter's answer before a family sees it
// (Answer). It is a package of its own, outside the host, so that an
// author's tests (sdk/plugintest runs both) apply exactly the checks every
// host applies, and so that the author's package, sdk, holds only what an
// author writes against.
package hostcheck
