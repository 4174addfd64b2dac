module rlark.io/rlark-net

go 1.25.0

require golang.org/x/crypto v0.48.0

require golang.org/x/sys v0.46.0 // indirect
