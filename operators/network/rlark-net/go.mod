module rlark.io/rlark-net

go 1.22
