// Command printinfo prints buildinfo.Read for the package's test.
package main

import (
	"fmt"

	"github.com/veilhq/veil/internal/buildinfo"
)

func main() { fmt.Println(buildinfo.Read("dev")) }
