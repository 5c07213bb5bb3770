// Command assay-adapter-anthropic-messages is the anthropic-messages format
// adapter of context-composition/v1.
package main

import (
	"github.com/assay-audit/assay/plugins/adapter-anthropic-messages/anthropic"
	"github.com/assay-audit/assay/sdk"
)

func main() { sdk.ServeAdapter(anthropic.Adapter{}) }
