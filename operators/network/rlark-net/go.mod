module rlark.io/rlark-net

go 1.24.0

require golang.org/x/crypto v0.48.0
