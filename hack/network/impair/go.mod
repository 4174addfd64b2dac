module rlark.io/impair

go 1.26
